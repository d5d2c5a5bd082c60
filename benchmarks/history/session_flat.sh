#!/usr/bin/env bash
# One device call: the GPU suite (padded and flat caches, the n32 id-window configs), a bench of
# 8 shapes and the ablation of one, for the flat-cache decode. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 100 python -m pytest tests/test_gpu_decode.py -q -x -k "not every_tunable" -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -2
timeout 50 python -m pytest tests/test_gpu_decode.py -q -k "every_tunable and w128 and n32" -p no:cacheprovider 2>&1 | tee "$OUT/pytest_cfg.log" | tail -2
timeout 70 python -m cute_dsa bench --no-torch --iters 10 --batch 1,8,64,128 --heads 16,128 --width 2048 --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"; grep -v "^\[\|Warn\|choice =" "$OUT/bench.log" | tail -12
timeout 25 python -m cute_dsa ablate --batch 128 --heads 16 2>&1 | grep "^|" | tee "$OUT/ablate.log"
