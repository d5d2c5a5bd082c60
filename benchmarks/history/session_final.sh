#!/usr/bin/env bash
# One device call: the whole GPU suite (every id-window config of the tuning space), the full
# side-by-side grid with FlashMLA, and the stage ablation. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 100 python -m pytest tests/test_gpu_decode.py -q -x -k "not every_tunable" -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -2
timeout 120 python -m pytest tests/test_gpu_decode.py -q -k "every_tunable and w128" -p no:cacheprovider 2>&1 | tee "$OUT/pytest_cfg.log" | tail -2
timeout 260 python -m cute_dsa bench --no-torch --iters 10 ${BENCH_ARGS:-} --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"; grep "geomean" "$OUT/bench.log"
timeout 45 python -m cute_dsa ablate --batch 8,128 --heads 16,128 2>&1 | grep "^|" | tee "$OUT/ablate.log"
