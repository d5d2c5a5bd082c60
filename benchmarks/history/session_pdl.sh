#!/usr/bin/env bash
# One device call: programmatic dependent launch (resolve -> decode -> combine) and register-fed
# tokens as M with six ring slots: a deadlock guard, the GPU suite except the every-config sweep
# (the tuner checks every candidate against the oracle next), then small-batch timings of the
# defaults (against the full grid of 4e457f5) and the six-slot ring. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RF6="tiling=tokens_m,chunk_tokens=64,stages=6,id_window=0,convert=registers"
SKIP=""
timeout 60 python benchmarks/diag.py 3 16 2176 "$RF6,head_tile=16" 1 2>&1 | tail -1 || { echo "six-slot diag failed or hung: its tests skipped"; SKIP=" and not st6"; }
timeout 300 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "not every_tunable$SKIP" > "$OUT/pytest.log" 2>&1; echo "pytest rc=$?"
grep -E "passed|failed|FAILED|Error" "$OUT/pytest.log" | tail -8
timeout 80 python -m cute_dsa bench --no-torch --iters 10 --batch 1,2,8 --heads 8,16,64,128 --width 2048 --json "$OUT/bench_small.json" > "$OUT/bench_small.log" 2>&1
echo "== small batch, defaults rc=$?"; grep "^|" "$OUT/bench_small.log" | cut -d'|' -f2-4,6,11,15,17
for h in 8 16; do
  timeout 50 python -m cute_dsa bench --no-torch --iters 10 --batch 64,128,256 --heads $h --width 2048 \
    --config "$RF6,head_tile=$h" --json "$OUT/bench_rf6_t$h.json" > "$OUT/bench_rf6_t$h.log" 2>&1
  echo "== rf6 t$h rc=$?"; grep "^|" "$OUT/bench_rf6_t$h.log" | cut -d'|' -f2-4,6,11,15
done
