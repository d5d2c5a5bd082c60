#!/usr/bin/env bash
# One device call: the GPU suite, then `cute-dsa bench` with the given arguments.
#   bash benchmarks/gpu_check.sh [--skip-tests] [bench args...]
# Logs and the bench JSON land in $OUT (the device tool brings them back). Each step has a time
# limit so that a hang (a deadlocked kernel) cannot eat the whole call.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
if [ "${1:-}" = --skip-tests ]; then shift; else
  timeout 120 python benchmarks/smoke.py 2>&1 | tee "$OUT/smoke.log"
  timeout 300 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -15
fi
timeout 240 python -m cute_dsa bench --json "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.log" | grep -v "^\["
