#!/usr/bin/env bash
# One device call: smoke, the GPU suite, the stage ablation, the side-by-side bench (FlashMLA).
# Each phase has its own time limit; outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
timeout 60 python benchmarks/smoke.py 2>&1 | grep -v Warn | tee "$OUT/smoke.log"
timeout 150 python -m pytest tests/test_gpu_decode.py -q -x -k "not every_tunable" -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -3
timeout 150 python -m pytest tests/test_gpu_decode.py -q -k every_tunable -p no:cacheprovider 2>&1 | tee "$OUT/pytest_cfg.log" | tail -3
timeout 100 python -m cute_dsa ablate ${ABLATE_ARGS:---batch 1,8,64,128 --heads 16,64,128} 2>&1 | grep -v Warn | tee "$OUT/ablate.log"
timeout 60 python -m cute_dsa ablate --batch 8,64,128 --heads 16,128 --config chunk_tokens=16,stages=8,kv_buffers=3 2>&1 | grep "^|" | tee "$OUT/ablate_kv3.log"
timeout 100 python -m cute_dsa bench --no-torch ${BENCH_ARGS:---batch 1,8,64,128 --heads 16,64,128 --width 2048} --iters 20 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | grep -v "Warn\|choice = " ; echo "bench rc=$?"
