#!/usr/bin/env bash
# One device call: the streamed resolve with its window step moved off the producer's copy path
# (commits fd6a32b, f65b8e5): its GPU tests, then the large-batch ablation at 8, 16 (register-fed
# tokens as M) and 64 heads (register-gather heads as M), the call streamed vs with the resolve launch.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 240 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "streaming_its_own_ids or (workspace and stream)" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED\|^ERROR" "$OUT/pytest.log" | head -12
grep -q " passed" "$OUT/pytest.log" && ! grep -q " failed\| error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 300 python -m cute_dsa ablate --graph --drops "" --batch 64,128,256 --heads 8,16,64 --width 2048 > "$OUT/ablate.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate.log" | cut -d"|" -f2-5,7,9,10,11,13
