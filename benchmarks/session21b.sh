#!/usr/bin/env bash
# One device call (twenty-first session).
# On an H200, in this order, each step cut to what is left of DEADLINE seconds (gpu_lib.sh `left`):
# (1) the issue-3 grid at HEAD with the shipped table on both widths (the H200 has not timed the
# kernels since `12a1f02`); (2) the 32-head buckets re-tuned with heads as M among the candidates
# (the buckets' current winners t32 st2 w0 / t32 st2 w128 / t32 st3 w128 against n64 st4 kv2 w128
# lg s1, every batch, W=2048); (3) the two-split 64/128-head buckets with and without overlap;
# tuning/NVIDIA_H200.yaml and its progress file come back; (4) the grid with the heuristic's
# choices (no table).
# On another GPU (its grid with the heuristic's choices ran at 699235f): the heads-as-M config with
# and without overlap on the same cells in one call (OV_ARGS; 64/128 heads at B 32-256 ran at
# 9ecaa74; the default: the small-batch 128-head cells, where the H200 table keeps overlap).
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
echo "commit ${CUTE_DSA_COMMIT:-?}"
case "$GPU" in
  *H200*) ;;
  *)
    export BENCH_ARGS=${OV_ARGS:-"--width 2048,2176 --heads 128 --batch 1,2,8"}
    HM="chunk_tokens=64,stages=4,gather=ld_global,scores=one"
    BENCH_S=$(left 90) bench_run ov_off --config "$HM"
    BENCH_S=$(left 90) bench_run ov_on --config "$HM,overlap=true"
    tar cJf "$OUT/kcache.txz" -C /tmp kcache; exit 0 ;;
esac
for W in ${WIDTHS-2048 2176}; do BENCH_ARGS= BENCH_S=$(left 120) bench_run "grid_$W" --width "$W"; done
tune_step() {  # NAME MAX_S TUNE_ARGS...: re-tune some buckets into tuning/NVIDIA_H200.yaml
  local name=$1 limit; limit=$(left "$2"); shift 2
  [ "$limit" -gt 0 ] || { echo "no time for $name"; return; }
  timeout "$limit" python -m cute_dsa tune --width 2048 --watchdog 0 "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?"; grep "best\|wrote" "$OUT/$name.log"; cp tuning/NVIDIA_H200.yaml* "$OUT/"
}
tune_step tune_h32 240 --batch 1,2,8,32,64,128,256 --heads 32 --configs "t32 st2 w0;t32 st2 w128;t32 st3 w128;n64 st4 kv2 w128 lg s1"
# Overlap (the table's choice there) lost 10-16% on the H100 with two splits.
tune_step tune_ov 90 --batch 32,64 --heads 64,128 --configs "n64 st4 kv2 w128 lg s1;n64 st4 kv2 w128 ov lg s1"
mv tuning/NVIDIA_H200.yaml /tmp/ && for W in ${WIDTHS-2048 2176}; do  # the heuristic's choices: no table
  BENCH_ARGS= BENCH_S=$(left 100) bench_run "heuristic_grid_$W" --width "$W"; done
mv /tmp/NVIDIA_H200.yaml tuning/
tar cJf "$OUT/kcache.txz" -C /tmp kcache
