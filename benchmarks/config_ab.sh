#!/usr/bin/env bash
# A/B of forced configs in one tree, on one machine: the same bench cells (BENCH_ARGS, each cell
# oracle-checked) with each config of CONFIGS (';'-separated `bench --config` texts), alternating,
# REPS rounds (default 2); logs and JSON as $OUT/${TAG:-cfg}<i>_<round>. Kernels come from
# .carry/kcache.txz where it has them.
#   CONFIGS="tiling=tokens_m,head_tile=16,chunk_tokens=64,stages=3;...,l2_prefetch=true" \
#   BENCH_ARGS="--width 2048 --heads 16 --batch 32,128" bash benchmarks/config_ab.sh
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
O=${OUT:-/tmp/out}; mkdir -p "$O"; export OUT=$O
use_kernel_cache
borrow_h200_table
IFS=';' read -ra cfgs <<< "$CONFIGS"
for rep in $(seq 1 "${REPS:-2}"); do
  for i in "${!cfgs[@]}"; do
    name="${TAG:-cfg}${i}_$rep"
    timeout "${BENCH_S:-120}" python -m cute_dsa bench --no-torch --iters 10 $BENCH_ARGS --config "${cfgs[$i]}" \
      --json "$O/$name.json" > "$O/$name.log" 2>&1
    echo "== $name rc=$? ${cfgs[$i]}"; grep "^|\|geomean\|kernel cache" "$O/$name.log" | cut -d"|" -f2-4,6,12,17,19,20
  done
done
tar cJf "$O/kcache.txz" -C /tmp kcache
