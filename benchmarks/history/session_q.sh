#!/usr/bin/env bash
# One device call: the one-scorer heads-as-M kernel with Q staged by its consumers (the producer
# goes straight to the row ids): every heads-as-M test with scores='one', the fused-resolve tests,
# the test grid; then the ablation and the grid next to FlashMLA at small batch and at B=128.
# Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 250 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "(heads_as_m and s1) or resolving_its_own_ids or test_grid or holes or all_duplicates or cuda_graph" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -8
grep -q " passed" "$OUT/pytest.log" && ! grep -q "failed\|error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 80 python -m cute_dsa ablate --graph --drops "" --batch 1,8 --heads 64,128 --width 2048 > "$OUT/ablate_small.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small.log"
timeout 150 python -m cute_dsa bench --no-torch --iters 10 --batch 1,2,8,128 --heads 8,16,32,64,128 --width 2048 --json "$OUT/grid.json" > "$OUT/grid.log" 2>&1
echo "bench rc=$?"; grep "^|" "$OUT/grid.log" | cut -d"|" -f2-4,6,12,16,17
