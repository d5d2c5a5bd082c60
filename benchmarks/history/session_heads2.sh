#!/usr/bin/env bash
# One device call: heads as M with one scoring consumer, now also with QK(c+1) issued ahead of
# PV(c) (overlap), five register sets of rows in flight, and three 48-token K/V tiles: against the
# oracle, then timed at 64/128 heads; the ablation of one. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 60 python benchmarks/diag.py 3 64 2176 "chunk_tokens=64,stages=5,gather=ld_global,scores=one,overlap=true" 1 2>&1 | tail -1 || echo "diag failed or hung"
timeout 200 python -m pytest tests/test_gpu_decode.py -q -k "heads_as_m and (ov or n48)" -p no:cacheprovider > "$OUT/pytest_heads2.log" 2>&1; echo "pytest rc=$?"
tail -1 "$OUT/pytest_heads2.log"; grep "^FAILED" "$OUT/pytest_heads2.log" | head -8
B="chunk_tokens=64,kv_buffers=2,gather=ld_global,scores=one"
T="chunk_tokens=48,kv_buffers=3,gather=ld_global,scores=one"
for c in "$B,stages=4" "$B,stages=5" "$B,stages=4,overlap=true" "$B,stages=5,overlap=true" "$T,stages=4" "$T,stages=5,overlap=true" \
         "chunk_tokens=32,stages=4,scores=one,overlap=true"; do
  timeout 60 python -m cute_dsa bench --no-torch --no-flashmla --iters 10 --batch 32,64,128 --heads 64,128 --width 2048 \
    --config "$c" --json "$OUT/bench_$(echo $c | tr ',=' '__').json" > "$OUT/bench_cfg.log" 2>&1
  echo "== $c rc=$?"; grep "^|" "$OUT/bench_cfg.log" | cut -d"|" -f2-4,6,18 | tail -6 | tr '\n' ';'; echo
done
timeout 40 python -m cute_dsa ablate --batch 128 --heads 64 --config "$B,stages=5,overlap=true" 2>&1 | grep "^|" | tail -1 | tee "$OUT/ablate_s1ov.log"
