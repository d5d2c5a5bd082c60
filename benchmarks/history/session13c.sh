#!/usr/bin/env bash
# One device call: the streamed-resolve GPU tests (window step moved in fd6a32b/f65b8e5), then the
# small-batch ablation at the other head counts: the call with the slice resolve, streamed, and
# with the resolve launch.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python -c "import torch; print(torch.cuda.get_device_name())"
timeout 200 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "streaming_its_own_ids or (workspace and stream)" > "$OUT/pytest_stream.log" 2>&1
echo "stream pytest rc=$?"; tail -1 "$OUT/pytest_stream.log"; grep "^FAILED\|^ERROR" "$OUT/pytest_stream.log" | head -8
timeout 110 python -m cute_dsa ablate --graph --drops "" --batch 1,2,8 --heads 16,32,128 --width 2048 > "$OUT/ablate_small2.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small2.log" | cut -d"|" -f2-11
