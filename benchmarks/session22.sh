#!/usr/bin/env bash
# One device call (twenty-second session), each step cut to what is left of DEADLINE seconds.
# (1) On any GPU: heads as M with 4, 5 and 6 register sets of rows in flight (the fifth and sixth
#     take 16 registers each from the scorer), alternating, REPS rounds, every cell oracle-checked
#     (logical and physical ids) before it is timed: AB_ARGS cells (default 32/64/128 heads, B 8-256).
# (1a) On any GPU: the GPU tests of the 5- and 6-set configs.
# (1b) On another GPU: the streamed resolve against the launch at B=8 (ablate).
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
# (1a) The GPU tests of the 5- and 6-set configs (test_heads_as_m: 5, 64, 100 and 128 heads, splits,
# holes, duplicates, bad blocks, an empty row, one chunk, small blocks).
l=$(left 150); [ "$l" -gt 0 ] && run_gpu_tests pytest_sets "$l" tests/test_gpu_decode.py -k "heads_as_m and (st5 or st6)"
case "$GPU" in *H200*) ;; *)
  # (1b) Elsewhere: splits of 192-256 positions (B=8; W=2176 takes 16 splits of 192) resolved window
  # by window in the decode against the resolve launch (the automatic choice above 128 positions).
  l=$(left 150); [ "$l" -gt 0 ] && { timeout "$l" python -m cute_dsa ablate --graph --drops "" --fuse stream --batch 8 \
    --heads 8,16,32,64,128 --width 2048,2176 > "$OUT/ablate_stream_b8.log" 2>&1; echo "ablate rc=$?"
    grep "^|\|timing\|Error" "$OUT/ablate_stream_b8.log"; }
  tar cJf "$OUT/kcache.txz" -C /tmp kcache; exit 0 ;; esac
tar cJf "$OUT/kcache.txz" -C /tmp kcache
DEADLINE=$(( ${DEADLINE:-570} - SECONDS )) bash benchmarks/session21b.sh
