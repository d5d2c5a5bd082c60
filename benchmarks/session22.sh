#!/usr/bin/env bash
# One device call (twenty-second session), each step cut to what is left of DEADLINE seconds.
# (1) On any GPU: heads as M with 4, 5 and 6 register sets of rows in flight (the fifth and sixth
#     take 16 registers each from the scorer), alternating, REPS rounds, every cell oracle-checked
#     (logical and physical ids) before it is timed: AB_ARGS cells (default 32/64/128 heads, B 8-256).
# (2) On an H200 only, with what is left: session21b.sh's steps (the grid with the shipped table,
#     the 32-head and overlap re-tunes, the grid with the heuristic's choices).
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
echo "commit ${CUTE_DSA_COMMIT:-?}"
LG="chunk_tokens=64,gather=ld_global,scores=one"
for rep in $(seq 1 "${REPS:-2}"); do
  for st in ${SETS:-4 5 6}; do
    BENCH_ARGS=${AB_ARGS:-"--width 2048 --heads 32,64,128 --batch 8,32,64,128,256"} BENCH_S=$(left 60) \
      bench_run "sets${st}_$rep" --config "$LG,stages=$st"
  done
done
tar cJf "$OUT/kcache.txz" -C /tmp kcache
case "$GPU" in *H200*) ;; *) exit 0 ;; esac
DEADLINE=$(( ${DEADLINE:-570} - SECONDS )) bash benchmarks/session21b.sh
