#!/usr/bin/env bash
# One device call: the batched Q staging (all kernels) and the aligned ld_global loop against the
# oracle; a short re-tune of the 64/128-head buckets from 32 rows (the old winners next to the
# 64-token one-scorer configs), merged into tuning/NVIDIA_H200.yaml; then the whole issue-3 grid
# next to FlashMLA. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 30 python benchmarks/diag.py 3 128 2176 "chunk_tokens=64,stages=4,gather=ld_global,scores=one" 1 2>&1 | tail -1 || { echo "diag failed or hung"; exit 1; }
timeout 30 python benchmarks/diag.py 130 16 2176 - - 2>&1 | tail -1 || { echo "diag failed or hung"; exit 1; }
timeout 120 python -m pytest tests/test_gpu_decode.py -q -k "test_grid or (heads_as_m and n64-st4-kv2-w128) or cuda_graph" -p no:cacheprovider > "$OUT/pytest.log" 2>&1; echo "pytest rc=$?"
tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -5
grep -q " passed" "$OUT/pytest.log" && ! grep -q "failed\|error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no tuning"; exit 1; }
rm -f tuning/NVIDIA_H200.yaml.progress.jsonl
timeout 130 python -m cute_dsa tune --tiling heads_m --heads 64,128 --batch 32,64,128,256 --watchdog 60 \
  --configs "n32 st2 kv2 w128;n32 st2 kv3 w128;n64 st4 kv2 w128 lg s1;n64 st4 kv2 w128 ov lg s1" > "$OUT/tune.log" 2>&1
echo "tune rc=$?"; grep "best" "$OUT/tune.log" | tail -8
cp tuning/NVIDIA_H200.yaml "$OUT/NVIDIA_H200.yaml"; cp tuning/NVIDIA_H200.yaml.progress.jsonl "$OUT/tune.jsonl"
timeout 270 python -m cute_dsa bench --no-torch --iters 10 --json "$OUT/grid.json" > "$OUT/grid.log" 2>&1
echo "bench rc=$?"; grep -v "^\[\|Warn\|choice =" "$OUT/grid.log" | grep "^|" | cut -d"|" -f2-4,6,12,16
