#!/usr/bin/env bash
# One device call: smoke, the GPU suite, the stage ablation, the side-by-side bench (FlashMLA).
# Each phase has its own time limit; outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
git rev-parse --short HEAD; git status --short | head -5
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
timeout 60 python benchmarks/smoke.py 2>&1 | tee "$OUT/smoke.log"
timeout 120 python -m pytest tests/test_gpu_decode.py -q -x -k "not every_tunable" -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -4
timeout 120 python -m cute_dsa ablate ${ABLATE_ARGS:---batch 1,8,64,128 --heads 16,64,128} 2>&1 | tee "$OUT/ablate.log"
timeout 150 python -m cute_dsa bench --no-torch ${BENCH_ARGS:---batch 1,8,64,128 --heads 16,64,128 --width 2048} --iters 20 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | grep -v "^\[" ; echo "bench rc=$?"
timeout 100 python -m pytest tests/test_gpu_decode.py -q -k every_tunable -p no:cacheprovider 2>&1 | tee "$OUT/pytest_cfg.log" | tail -4
