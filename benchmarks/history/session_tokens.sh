#!/usr/bin/env bash
# One device call: the tokens-as-M decode against the oracle (GPU tests), then timed next to
# FlashMLA and the heads-as-M default on small head counts. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 200 python -m pytest tests/test_gpu_decode.py -q -x -k "tokens_as_m" -p no:cacheprovider 2>&1 | tee "$OUT/pytest_tokens.log" | tail -4
for h in 8 16 32; do
  timeout 60 python -m cute_dsa bench --no-torch --iters 10 --batch 1,8,64,128 --heads $h --width 2048 \
    --config "tiling=tokens_m,head_tile=$h,chunk_tokens=64,stages=3" --json "$OUT/bench_t$h.json" > "$OUT/bench_t$h.log" 2>&1
  echo "== tokens_m t$h rc=$?"; grep "^|" "$OUT/bench_t$h.log" | cut -d'|' -f2-6,11-13,16-17
done
