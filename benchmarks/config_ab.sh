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
bench_setup
IFS=';' read -ra cfgs <<< "$CONFIGS"
for rep in $(seq 1 "${REPS:-2}"); do
  for i in "${!cfgs[@]}"; do
    bench_run "${TAG:-cfg}${i}_$rep" --config "${cfgs[$i]}"
  done
done
tar cJf "$OUT/kcache.txz" -C /tmp kcache
