#!/usr/bin/env bash
# One device call: the combine with every split's row prefetched (depth by launch) against the
# oracle, with the fused-resolve and split tests; the ablation with every stage dropped at B=1
# (what bounds the small-batch decode); then the whole issue-3 grid next to FlashMLA.
# Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 150 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "resolving_its_own_ids or forced_splits or test_grid or holes or all_duplicates or blocks_not_back" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -8
grep -q " passed" "$OUT/pytest.log" && ! grep -q "failed\|error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 70 python -m cute_dsa ablate --graph --batch 1 --heads 8,32,64 --width 2048 > "$OUT/ablate_drops.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_drops.log"
timeout 300 python -m cute_dsa bench --no-torch --iters 10 --json "$OUT/grid.json" > "$OUT/grid.log" 2>&1
echo "bench rc=$?"; grep "^|" "$OUT/grid.log" | cut -d"|" -f2-4,6,12,16,17
