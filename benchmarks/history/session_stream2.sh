#!/usr/bin/env bash
# One device call: the streamed resolve after the id-window move fix: its GPU tests, then the
# large-batch ablation (whole call streamed vs with the resolve launch, decode alone each way).
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 200 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "streaming_its_own_ids or test_grid" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED\|^ERROR" "$OUT/pytest.log" | head -12
grep -q " passed" "$OUT/pytest.log" && ! grep -q " failed\| error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 200 python -m cute_dsa ablate --graph --drops "" --batch 32,128,256 --heads 8,64,128 --width 2048 > "$OUT/ablate.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate.log" | cut -d"|" -f2-5,7,9,10,11,13
