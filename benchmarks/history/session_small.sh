#!/usr/bin/env bash
# One short device call: the 64-token one-scorer config (and its 32-token, 2-set sibling) at the
# small-batch 64/128-head cells, which still take the cp.async configs of the old sweep.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for c in "chunk_tokens=64,stages=4,gather=ld_global,scores=one" "chunk_tokens=32,stages=2,gather=ld_global,scores=one,id_window=0"; do
  timeout 60 python -m cute_dsa bench --no-torch --no-flashmla --iters 10 --batch 1,2,8 --heads 64,128 --width 2048 \
    --config "$c" > "$OUT/bench.log" 2>&1
  echo "== $c rc=$?"; grep "^|" "$OUT/bench.log" | cut -d"|" -f2-4,6,18 | tail -6 | tr '\n' ';'; echo
done
