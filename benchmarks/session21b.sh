#!/usr/bin/env bash
# One device call (twenty-first session).
# On an H200: (1) re-tunes the 32-head buckets with heads as M among the candidates (the buckets'
# current winners t32 st2 w0 / t32 st2 w128 / t32 st3 w128 against n64 st4 kv2 w128 lg s1, every
# batch, W=2048) and the two-split 64/128-head buckets with and without overlap, bringing back
# tuning/NVIDIA_H200.yaml and its progress file; (2) the issue-3 grid at HEAD with the re-tuned
# table on both widths; (3) the grid with the heuristic's choices (no table).
# On another GPU (its grid with the heuristic's choices ran at 699235f): the heads-as-M config with
# and without overlap at 64/128 heads, B 32-256, both widths, the same cells in one call.
# Every step is cut to what is left of DEADLINE seconds.
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
echo "commit ${CUTE_DSA_COMMIT:-?}"
case "$GPU" in
  *H200*)
    timeout "$(left 240)" python -m cute_dsa tune --batch 1,2,8,32,64,128,256 --heads 32 --width 2048 --watchdog 0 \
      --configs "t32 st2 w0;t32 st2 w128;t32 st3 w128;n64 st4 kv2 w128 lg s1" > "$OUT/tune_h32.log" 2>&1
    echo "tune rc=$?"; grep "best\|wrote" "$OUT/tune_h32.log"
    # The two-split heads-as-M buckets: overlap (the table's choice) lost 10-16% on the H100.
    timeout "$(left 90)" python -m cute_dsa tune --batch 32,64 --heads 64,128 --width 2048 --watchdog 0 \
      --configs "n64 st4 kv2 w128 lg s1;n64 st4 kv2 w128 ov lg s1" > "$OUT/tune_ov.log" 2>&1
    echo "tune rc=$?"; grep "best\|wrote" "$OUT/tune_ov.log"; cp tuning/NVIDIA_H200.yaml* "$OUT/" ;;
  *)  # the grid with its own choices ran at 699235f; here the overlap A/B of the heads-as-M cells
    export BENCH_ARGS="--width 2048,2176 --heads 64,128 --batch 32,64,128,256"
    BENCH_S=$(left 90) bench_run ov_off --config "chunk_tokens=64,stages=4,gather=ld_global,scores=one"
    BENCH_S=$(left 90) bench_run ov_on --config "chunk_tokens=64,stages=4,gather=ld_global,scores=one,overlap=true"
    tar cJf "$OUT/kcache.txz" -C /tmp kcache; exit 0 ;;
esac
for W in ${WIDTHS-2048 2176}; do BENCH_ARGS= BENCH_S=$(left 150) bench_run "grid_$W" --width "$W"; done
case "$GPU" in  # the H200 with the heuristic's choices too (the shipped table moved out of the way)
  *H200*) mv tuning/NVIDIA_H200.yaml /tmp/ && for W in ${WIDTHS-2048 2176}; do
    BENCH_ARGS= BENCH_S=$(left 100) bench_run "heuristic_grid_$W" --width "$W"; done
    mv /tmp/NVIDIA_H200.yaml tuning/ ;;
esac
tar cJf "$OUT/kcache.txz" -C /tmp kcache
