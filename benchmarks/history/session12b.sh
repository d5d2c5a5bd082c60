#!/usr/bin/env bash
# One device call: the torch-ops GPU test after the workspace-argument fix (877ec59), then on an
# H200 the issue-3 grid at WIDTH with the phys columns, on any other card a small-batch ablation,
# then the streamed-resolve tests and ablation (session_stream3.sh).
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 120 python -m pytest tests/test_torch_ops.py -q -p no:cacheprovider --tb=short > "$OUT/pytest_ops.log" 2>&1
echo "torch-ops pytest rc=$?"; tail -1 "$OUT/pytest_ops.log"; grep "^FAILED\|^E " "$OUT/pytest_ops.log" | head -8
GPU=$(python -c "import torch; print(torch.cuda.get_device_name())"); echo "$GPU"
case "$GPU" in
  *H200*) SKIP_TESTS=1 BENCH_S=${BENCH_S:-330} bash benchmarks/history/session_phys.sh ;;
  *) # small batch: is the fused (slice) resolve what costs the logical path 10-15 us over physical ids?
     timeout 150 python -m cute_dsa ablate --graph --drops "" --batch 1,8 --heads 8,64 --width 2048 > "$OUT/ablate_small.log" 2>&1
     echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small.log" | cut -d"|" -f2-11
     bash benchmarks/history/session_stream3.sh ;;
esac
