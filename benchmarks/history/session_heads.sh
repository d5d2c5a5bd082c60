#!/usr/bin/env bash
# One device call: heads as M with the ld_global producer (no raw ring) and/or one scoring consumer
# (scores=one, P shared through shared memory): against the oracle, then timed at 64/128 heads next
# to the tuned default and FlashMLA; the ablation of the 64-token variant. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S1="chunk_tokens=64,stages=4,gather=ld_global,scores=one"
for c in "$S1" "chunk_tokens=32,stages=4,scores=one" "chunk_tokens=32,stages=2,gather=ld_global"; do
  timeout 60 python benchmarks/diag.py 3 64 2176 "$c" 1 2>&1 | tail -1 || echo "diag $c failed or hung"
done
timeout 240 python -m pytest tests/test_gpu_decode.py -q -k "heads_as_m" -p no:cacheprovider > "$OUT/pytest_heads.log" 2>&1; echo "pytest rc=$?"
tail -1 "$OUT/pytest_heads.log"; grep "^FAILED" "$OUT/pytest_heads.log" | head -8
timeout 70 python -m cute_dsa bench --no-torch --iters 10 --batch 32,64,128 --heads 64,128 --width 2048 \
  --json "$OUT/bench_default.json" > "$OUT/bench_default.log" 2>&1
echo "== tuned default rc=$?"; grep "^|" "$OUT/bench_default.log" | cut -d"|" -f2-4,6,11,12,16,18
for c in "$S1" "chunk_tokens=64,stages=2,gather=ld_global,scores=one,id_window=0" "chunk_tokens=32,stages=4,scores=one" \
         "chunk_tokens=32,stages=2,gather=ld_global" "chunk_tokens=32,stages=3,kv_buffers=3,gather=ld_global,scores=one"; do
  timeout 60 python -m cute_dsa bench --no-torch --no-flashmla --iters 10 --batch 32,64,128 --heads 64,128 --width 2048 \
    --config "$c" --json "$OUT/bench_$(echo $c | tr ',=' '__').json" > "$OUT/bench_cfg.log" 2>&1
  echo "== $c rc=$?"; grep "^|" "$OUT/bench_cfg.log" | cut -d"|" -f2-4,6,18
done
timeout 40 python -m cute_dsa ablate --batch 128 --heads 64 --config "$S1" 2>&1 | grep "^|" | tee "$OUT/ablate_s1.log"
