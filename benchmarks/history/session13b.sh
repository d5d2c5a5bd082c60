#!/usr/bin/env bash
# One device call: the pair GPU tests (every pair config of the tuner's space, 65/100/128 heads,
# bitwise against two separate head tiles), pair st2+overlap at 128 heads, then the small-batch
# ablation (logical call vs decode alone) and the W=2048 grid with the H200 table borrowed
# (header renamed to this GPU) next to the heuristic.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
GPU=$(python -c "import torch; print(torch.cuda.get_device_name())"); echo "$GPU"
timeout 170 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k pair > "$OUT/pytest_pair.log" 2>&1
echo "pair pytest rc=$?"; tail -1 "$OUT/pytest_pair.log"; grep "^FAILED" "$OUT/pytest_pair.log" | head -8
timeout 60 python -m cute_dsa bench --no-torch --iters 10 --width 2048 --heads 128 --batch 64,256 --config "chunk_tokens=64,stages=2,gather=ld_global,scores=one,overlap=true,pair=true" --json "$OUT/pair_ov.json" > "$OUT/pair_ov.log" 2>&1
echo "bench pair st2 ov rc=$?"; grep "^|" "$OUT/pair_ov.log" | cut -d"|" -f2-4,6,12,17,19,20,22
timeout 100 python -m cute_dsa ablate --graph --drops "" --batch 1,8 --heads 8,64 --width 2048 > "$OUT/ablate_small.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small.log" | cut -d"|" -f2-11
sed "s/gpu: NVIDIA H200/gpu: $GPU/" tuning/NVIDIA_H200.yaml > /tmp/borrowed.yaml
CUTE_DSA_TUNING_FILE=/tmp/borrowed.yaml timeout ${BENCH_S:-150} python -m cute_dsa bench --no-torch --heuristic --iters 10 --width 2048 --heads 8,32,128 --batch 1,8,64,256 --json "$OUT/grid_borrowed.json" > "$OUT/grid_borrowed.log" 2>&1
echo "bench rc=$?"; grep "^|\|geomean" "$OUT/grid_borrowed.log" | cut -d"|" -f2-4,6,12,17,19,20,21
