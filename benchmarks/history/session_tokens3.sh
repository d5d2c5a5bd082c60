#!/usr/bin/env bash
# One device call: tokens-as-M with consumer-side conversion (convert=consumer: the producer only
# gathers) against the oracle, then timed next to FlashMLA; its ablation. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
CC="tiling=tokens_m,head_tile=16,chunk_tokens=64,stages=4,convert=consumer"
timeout 40 python benchmarks/diag.py 3 16 2176 "$CC" 1 2>&1 | tail -2 || { echo "diag failed or hung"; exit 1; }
timeout 150 python -m pytest tests/test_gpu_decode.py -q -x -k "tokens_as_m" -p no:cacheprovider > "$OUT/pytest_tokens.log" 2>&1; echo "pytest rc=$?"
tail -1 "$OUT/pytest_tokens.log"; grep -q " passed" "$OUT/pytest_tokens.log" && ! grep -q "failed\|error" "$OUT/pytest_tokens.log" || { grep -m5 "Error\|assert" "$OUT/pytest_tokens.log"; echo "GPU tests did not pass: no timing"; exit 1; }
for spec in "8 4 consumer" "16 4 consumer" "32 3 producer"; do
  set -- $spec
  timeout 60 python -m cute_dsa bench --no-torch --iters 10 --batch 1,8,64,128 --heads $1 --width 2048 \
    --config "tiling=tokens_m,head_tile=$1,chunk_tokens=64,stages=$2,convert=$3" --json "$OUT/bench_t$1.json" > "$OUT/bench_t$1.log" 2>&1
  echo "== tokens_m t$1 st$2 $3 rc=$?"; grep "^|" "$OUT/bench_t$1.log" | cut -d'|' -f2-6,11-13,16
done
timeout 40 python -m cute_dsa ablate --batch 128 --heads 16 --config "$CC" 2>&1 | grep "^|" | tee "$OUT/ablate_b128.log"
