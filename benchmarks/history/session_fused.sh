#!/usr/bin/env bash
# One device call: the decode that resolves its own ids (fused_resolve) against the oracle and
# bitwise against the two-launch path, every tiling; then where the time goes at small batch by
# CUDA-graph replay (whole call fused and unfused, each launch alone). Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 300 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "resolving_its_own_ids or forced_splits or test_grid or holes or all_duplicates or cuda_graph or blocks_not_back or (heads_as_m and n64-st4-kv2-w128) or (tokens_as_m and t8-st4-w128-rf)" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -8
grep -q " passed" "$OUT/pytest.log" && ! grep -q "failed\|error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 220 python -m cute_dsa ablate --graph --drops "" --batch 1,2,8,32 --heads 8,32,64,128 --width 2048 > "$OUT/ablate_small.log" 2>&1
echo "ablate rc=$?"
grep "^|\|timing" "$OUT/ablate_small.log"
