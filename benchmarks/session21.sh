#!/usr/bin/env bash
# One device call (twenty-first session), every kernel from the carried kernel cache:
#  1. on an H200 only: the issue-3 grid at HEAD on both widths (the H200 has not timed the kernels
#     since `12a1f02`; the H100 timed HEAD's kernels at `ad762b4`), then the 32-head buckets from
#     128 rows re-tuned with heads as M among the candidates (tuning/NVIDIA_H200.yaml brought back);
#  2. the streamed in-decode resolve at large batch (`ablate --graph --fuse stream`: call streamed
#     vs call with the resolve launch vs the decode alone), not timed since the eighth session
#     (1.4x slower then); its window step has moved off the copy path since (`fd6a32b`, `f65b8e5`);
#  3. 32 heads as M (one 64-row tile, half padding) against the tuned tokens-as-M choice;
#  4. (STREAM_TESTS=1) the streamed resolve's GPU tests, bitwise equal to the resolve launch with
#     every tuned config that can stream (their kernels compile here; the cache comes back).
# Every step is cut to what is left of DEADLINE seconds (default 570). Kcache build (no GPU): the
# grid, `--fuse stream` at the ablated cells, `--config $HM` at 32 heads (see gpu-tests.md).
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
echo "commit ${CUTE_DSA_COMMIT:-?}"
HM="chunk_tokens=64,stages=4,gather=ld_global,scores=one"
case "$GPU" in
  *H200*)
    for W in ${WIDTHS-2048 2176}; do BENCH_ARGS= BENCH_S=$(left 130) bench_run "grid_$W" --width "$W"; done
    timeout "$(left 90)" python -m cute_dsa tune --batch 128,256 --heads 32 --width 2048 --watchdog 0 \
      --configs "t32 st2 w128;t32 st3 w128;n64 st4 kv2 w128 lg s1" > "$OUT/tune_h32.log" 2>&1
    echo "tune rc=$?"; tail -4 "$OUT/tune_h32.log"; cp tuning/NVIDIA_H200.yaml* "$OUT/" ;;
esac
timeout "$(left 160)" python -m cute_dsa ablate --graph --drops "" --fuse stream --batch "${STREAM_B:-32,128,256}" \
  --heads "${STREAM_H:-8,16,64,128}" --width 2048 > "$OUT/ablate_stream.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing\|Error" "$OUT/ablate_stream.log"
export BENCH_ARGS="--width 2048 --heads 32 --batch 32,64,128,256"
BENCH_S=$(left 50) bench_run h32_tuned
BENCH_S=$(left 50) bench_run h32_hm --config "$HM"
if [ -n "$STREAM_TESTS" ] && [ "$(left 200)" -gt 0 ]; then
  run_gpu_tests pytest_stream "$(left 200)" tests/test_gpu_decode.py -k "streaming_its_own_ids"
fi
tar cJf "$OUT/kcache.txz" -C /tmp kcache
