#!/usr/bin/env bash
# One device call: where the tokens-as-M decode spends its time (ablation) and its ring depth / id
# window on the shapes where it beats FlashMLA least.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T16="tiling=tokens_m,head_tile=16,chunk_tokens=64"
for b in 128 8; do
  timeout 60 python -m cute_dsa ablate --batch $b --heads 16 --config "$T16,stages=3" 2>&1 | grep "^|" | tee "$OUT/ablate_b$b.log"
done
for v in "stages=2" "stages=4" "stages=4,id_window=0" "stages=3,id_window=256"; do
  timeout 60 python -m cute_dsa bench --no-torch --no-flashmla --iters 10 --batch 8,64,128 --heads 16 --width 2048 --config "$T16,$v" > "$OUT/bench.log" 2>&1
  echo "== $v rc=$?"; grep "^|" "$OUT/bench.log" | cut -d'|' -f2-6 | tail -3
done
