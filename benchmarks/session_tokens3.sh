#!/usr/bin/env bash
# One device call: tokens-as-M with consumer-side conversion (the producer only gathers) against
# the oracle, then timed next to FlashMLA; its ablation and ring depth. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 150 python -m pytest tests/test_gpu_decode.py -q -x -k "tokens_as_m" -p no:cacheprovider 2>&1 | tee "$OUT/pytest_tokens.log" | tail -2
grep -q " passed" "$OUT/pytest_tokens.log" && ! grep -q "failed\|error" "$OUT/pytest_tokens.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
for h in 8 16 32; do
  st=4; [ $h = 32 ] && st=3
  timeout 60 python -m cute_dsa bench --no-torch --iters 10 --batch 1,8,64,128 --heads $h --width 2048 \
    --config "tiling=tokens_m,head_tile=$h,chunk_tokens=64,stages=$st" --json "$OUT/bench_t$h.json" > "$OUT/bench_t$h.log" 2>&1
  echo "== tokens_m t$h st$st rc=$?"; grep "^|" "$OUT/bench_t$h.log" | cut -d'|' -f2-6,11-13,16
done
T16="tiling=tokens_m,head_tile=16,chunk_tokens=64"
timeout 40 python -m cute_dsa ablate --batch 128 --heads 16 --config "$T16,stages=4" 2>&1 | grep "^|" | tee "$OUT/ablate_b128.log"
for v in "stages=2" "stages=3"; do
  timeout 40 python -m cute_dsa bench --no-torch --no-flashmla --iters 10 --batch 64,128 --heads 16 --width 2048 --config "$T16,$v" > "$OUT/bench.log" 2>&1
  echo "== $v rc=$?"; grep "^|" "$OUT/bench.log" | cut -d'|' -f2-6 | tail -2
done
