#!/usr/bin/env bash
# Session B (2026-12-03): tune on the H200, then bench the tuned choice against the heuristic and
# FlashMLA over the full grid. Everything worth keeping is copied to $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python -m cute_dsa tune "$@" 2>&1 | tee "$OUT/tune.log" | grep -v "^\[" ; cp tuning/*.yaml "$OUT/" ; cp tuning/*.progress.jsonl "$OUT/tune_progress.jsonl"
python -m cute_dsa bench --heuristic --json "$OUT/bench_tuned.json" 2>&1 | tee "$OUT/bench_tuned.log" | grep -v "^\["
