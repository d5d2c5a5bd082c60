#!/usr/bin/env bash
# One device call: the fused resolve with its ids prefetched under the Q staging, against the
# oracle and bitwise against the two-launch path; the small-batch ablation by graph replay; the
# small-batch grid next to FlashMLA. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 240 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "resolving_its_own_ids or forced_splits or test_grid or holes or all_duplicates or cuda_graph or (tokens_as_m and t8-st4-w128-rf)" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -8
grep -q " passed" "$OUT/pytest.log" && ! grep -q "failed\|error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 100 python -m cute_dsa ablate --graph --drops "" --batch 1,8 --heads 8,32,64,128 --width 2048 > "$OUT/ablate_small.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small.log"
timeout 150 python -m cute_dsa bench --no-torch --iters 10 --batch 1,2,8 --width 2048 --json "$OUT/small.json" > "$OUT/small.log" 2>&1
echo "bench rc=$?"; grep "^|" "$OUT/small.log" | cut -d"|" -f2-4,6,12,16,17
