#!/usr/bin/env bash
# One device call: re-tune the small-batch heads-as-M buckets (64/128 heads, B=1/2/8) now that
# short splits resolve their own ids and the consumers stage Q (the splits may move), merged into
# tuning/NVIDIA_H200.yaml; then those cells next to FlashMLA. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
rm -f tuning/NVIDIA_H200.yaml.progress.jsonl
timeout 280 python -m cute_dsa tune --tiling heads_m --heads 64,128 --batch 1,2,8 --width 2048,2176 --watchdog 60 \
  --configs "n64 st4 kv2 w128 lg s1;n64 st4 kv2 w128 ov lg s1" > "$OUT/tune.log" 2>&1
echo "tune rc=$?"; grep "best" "$OUT/tune.log" | tail -12
cp tuning/NVIDIA_H200.yaml "$OUT/NVIDIA_H200.yaml"; cp tuning/NVIDIA_H200.yaml.progress.jsonl "$OUT/tune.jsonl"
timeout 120 python -m cute_dsa bench --no-torch --iters 10 --batch 1,2,8 --heads 64,128 --width 2048,2176 --json "$OUT/small.json" > "$OUT/small.log" 2>&1
echo "bench rc=$?"; grep "^|" "$OUT/small.log" | cut -d"|" -f2-4,6,12,16,17
