#!/usr/bin/env bash
# One device call: tune (resuming $1's progress file if given), then bench the tuned choice
# against the heuristic and FlashMLA over the full grid. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -f "$1" ] && cp "$1" tuning/NVIDIA_H200.yaml.progress.jsonl
timeout ${TUNE_S:-280} python -m cute_dsa tune ${TUNE_ARGS:-} 2>&1 | tee "$OUT/tune.log" | grep -v "^\[\|Warn\|choice =" | tail -5
cp tuning/NVIDIA_H200.yaml "$OUT/" ; cp tuning/NVIDIA_H200.yaml.progress.jsonl "$OUT/tune_progress.jsonl"
timeout ${BENCH_S:-250} python -m cute_dsa bench --no-torch --heuristic --iters 15 ${BENCH_ARGS:-} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | grep -v "^\[\|Warn\|choice ="
