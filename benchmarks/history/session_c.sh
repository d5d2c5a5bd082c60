#!/usr/bin/env bash
# Diagnose the illegal address seen in `bench` (B=1 H=8 W=2048) and which tunable config hangs.
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export CUDA_LAUNCH_BLOCKING=1
for c in "1 8 2048 - -" "1 8 2048 - 1" "1 64 2048 - -" "4 8 2048 - -" "1 8 2048 - - 3000" "1 8 2048 chunk_tokens=16,stages=6,q_in_regs=true -" "1 8 2048 overlap=false -" "1 8 2048 chunk_tokens=32,overlap=false,q_in_regs=true -"; do
  timeout 40 python benchmarks/diag.py $c 2>&1 | grep -v Warn | grep -v "choice = " | tail -2
done
unset CUDA_LAUNCH_BLOCKING
timeout 150 python -m pytest tests/test_gpu_decode.py -q -v -k every_tunable -p no:cacheprovider 2>&1 | grep -E "PASS|FAIL|ERROR|Error|error" | tail -25
