#!/usr/bin/env bash
# Everything in one device call (the GPU is hard to get; each phase has a time limit):
#   1. smoke + GPU suite (every tunable config, direct and split);
#   2. tune on a reduced grid (resumable: the progress file comes back in $OUT);
#   3. bench the tuned choice vs the heuristic, FlashMLA and torch over the full grid.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
timeout 60 python benchmarks/smoke.py 2>&1 | tee "$OUT/smoke.log"
timeout 170 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -12
[ -f "$1" ] && cp "$1" tuning/NVIDIA_H200.yaml.progress.jsonl   # resume an earlier run's progress
timeout 170 python -m cute_dsa tune --batch 1,4,16,64,256 2>&1 | tee "$OUT/tune.log" | grep -v "^\[" | tail -4
cp tuning/NVIDIA_H200.yaml "$OUT/" ; cp tuning/NVIDIA_H200.yaml.progress.jsonl "$OUT/tune_progress.jsonl"
timeout 190 python -m cute_dsa bench --heuristic --iters 20 --width 2048 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | grep -v "^\["
