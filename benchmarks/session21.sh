#!/usr/bin/env bash
# One device call (twenty-first session), every kernel from the carried kernel cache:
#  1. on an H200 only, the issue-3 grid at HEAD on both widths (the H200 has not timed the kernels
#     since `12a1f02`; the H100 timed HEAD's kernels at `ad762b4`);
#  2. the streamed in-decode resolve at large batch (`ablate --graph --fuse stream`: call streamed
#     vs call with the resolve launch vs the decode alone), not timed since the eighth session
#     (1.4x slower then); its window step has moved off the copy path since (`fd6a32b`, `f65b8e5`);
#  3. 32 heads as M (one 64-row tile, half padding) against the tuned tokens-as-M choice;
# Kcache build (no GPU): the grid, `--fuse stream` at the ablated cells, `--config $HM` at 32 heads
# (`python -m cute_dsa precompile --cache-dir /tmp/kcache_build ...`, see gpu-tests.md).
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
echo "commit ${CUTE_DSA_COMMIT:-?}"
case "$GPU" in
  *H200*) for W in ${WIDTHS-2048 2176}; do BENCH_ARGS= BENCH_S=${GRID_S:-150} bench_run "grid_$W" --width "$W"; done ;;
esac
timeout "${ABLATE_S:-200}" python -m cute_dsa ablate --graph --drops "" --fuse stream --batch "${STREAM_B:-32,128,256}" \
  --heads "${STREAM_H:-8,16,64,128}" --width 2048 > "$OUT/ablate_stream.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing\|Error" "$OUT/ablate_stream.log"
HM="chunk_tokens=64,stages=4,gather=ld_global,scores=one"
export BENCH_ARGS="--width 2048 --heads 32 --batch 32,64,128,256"
BENCH_S=60 bench_run h32_tuned
BENCH_S=60 bench_run h32_hm --config "$HM"
# 4. The streamed resolve's GPU tests (bitwise equal to the resolve launch with every tuned config
#    that can stream; their kernels compile here, into the kernel cache brought back).
[ -n "$STREAM_TESTS" ] && run_gpu_tests pytest_stream "${TEST_S:-200}" tests/test_gpu_decode.py -k "streaming_its_own_ids"
tar cJf "$OUT/kcache.txz" -C /tmp kcache
