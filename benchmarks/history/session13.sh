#!/usr/bin/env bash
# One device call: the torch-ops GPU test after the workspace-argument fix (877ec59); then on an
# H200 the issue-3 grid at WIDTH with the physical-id columns; on an H100 a small-batch ablation
# (logical call vs decode alone) and the W=2048 grid with the H200 tuning table borrowed (its
# header renamed to this GPU) next to the heuristic (--heuristic), physical ids included.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
WIDTH=${WIDTH:-2048}
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 120 python -m pytest tests/test_torch_ops.py -q -p no:cacheprovider --tb=short > "$OUT/pytest_ops.log" 2>&1
echo "torch-ops pytest rc=$?"; tail -1 "$OUT/pytest_ops.log"; grep "^FAILED\|^E " "$OUT/pytest_ops.log" | head -8
GPU=$(python -c "import torch; print(torch.cuda.get_device_name())"); echo "$GPU"
case "$GPU" in
  *H200*) SKIP_TESTS=1 BENCH_S=${BENCH_S:-400} bash benchmarks/history/session_phys.sh ;;
  *) timeout 120 python -m cute_dsa ablate --graph --drops "" --batch 1,8 --heads 8,64 --width 2048 > "$OUT/ablate_small.log" 2>&1
     echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small.log" | cut -d"|" -f2-11
     sed "s/gpu: NVIDIA H200/gpu: $GPU/" tuning/NVIDIA_H200.yaml > /tmp/borrowed.yaml
     CUTE_DSA_TUNING_FILE=/tmp/borrowed.yaml timeout ${BENCH_S:-300} python -m cute_dsa bench --no-torch --heuristic --iters 10 --width "$WIDTH" --json "$OUT/grid_borrowed_$WIDTH.json" > "$OUT/grid_borrowed_$WIDTH.log" 2>&1
     echo "bench rc=$?"; grep "^|\|geomean" "$OUT/grid_borrowed_$WIDTH.log" | cut -d"|" -f2-4,6,12,17,19,20,21 ;;
esac
