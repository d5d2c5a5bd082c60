#!/usr/bin/env bash
# One device call: the streamed in-decode resolve (kernels/stream_resolve.py) against the oracle and
# bitwise against the resolve launch, the suites that now take it automatically (splits of more
# than 128 positions), then the large-batch ablation: whole call streamed vs with the resolve launch.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 270 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "streaming_its_own_ids or test_grid or holes or all_duplicates or cuda_graph or forced_splits or long_context or blocks_not_back or resolving_its_own_ids" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED\|^ERROR" "$OUT/pytest.log" | head -12
grep -q " passed" "$OUT/pytest.log" && ! grep -q " failed\| error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; grep -m3 -A30 "^___" "$OUT/pytest.log" | head -80; exit 1; }
timeout 240 python -m cute_dsa ablate --graph --drops "" --batch 32,128,256 --heads 8,16,64,128 --width 2048 > "$OUT/ablate.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate.log" | cut -d"|" -f1-6,8,10,11 
