#!/usr/bin/env bash
# One device call: re-tune the buckets up to 32 heads with the tokens-as-M configs (plus the
# heads-as-M default for comparison), merged into tuning/NVIDIA_H200.yaml, then the whole issue-3
# grid with the new table next to FlashMLA. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
rm -f tuning/NVIDIA_H200.yaml.progress.jsonl
timeout 270 python -m cute_dsa tune --tiling tokens_m --heads 8,16,32 --batch 1,2,8,32,64,128,256 --watchdog 60 > "$OUT/tune.log" 2>&1
echo "tune rc=$?"; tail -3 "$OUT/tune.log"
cp tuning/NVIDIA_H200.yaml "$OUT/NVIDIA_H200.yaml"; cp tuning/NVIDIA_H200.yaml.progress.jsonl "$OUT/tune.jsonl"
python -m cute_dsa tune --report --tiling tokens_m --heads 8,16,32 --batch 1,2,8,32,64,128,256 --progress tuning/NVIDIA_H200.yaml.progress.jsonl | tail -3
timeout 230 python -m cute_dsa bench --no-torch --iters 10 --json "$OUT/grid.json" > "$OUT/grid.log" 2>&1
echo "bench rc=$?"; grep -v "^\[\|Warn\|choice =" "$OUT/grid.log" | tail -4
