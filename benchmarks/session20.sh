#!/usr/bin/env bash
# One device call (twentieth session), everything from the carried kernel cache (.carry/kcache.txz):
#  1. the issue-3 grid at HEAD on both widths (logical and physical ids, FlashMLA beside, each cell
#     oracle-checked) -- the H200 has not timed the kernels since `12a1f02`;
#  2. the GPU tests of every l2_prefetch (pf) config; only if they pass,
#  3. the pf A/B: 64/128 heads at B 32/128/256 (tuned n64 st4 one-scorer, the same with pf, st3 with
#     pf) and register-fed t16 at B 128/256 (without/with pf).
# Kcache build (no GPU): see benchmarks/gpu-tests.md, twentieth session.
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
echo "commit ${CUTE_DSA_COMMIT:-?}"
for W in ${WIDTHS-2048 2176}; do BENCH_ARGS= BENCH_S=${GRID_S:-150} bench_run "grid_$W" --width "$W"; done
run_gpu_tests pytest_pf "${TEST_S:-150}" tests/test_gpu_decode.py -k "every_tunable_config and pf" || exit 1
B="chunk_tokens=64,stages=4,gather=ld_global,scores=one"
R="tiling=tokens_m,head_tile=16,chunk_tokens=64,stages=4,convert=registers,release_early=true"
run_ab() {  # TAG BENCH_ARGS CONFIG...: each config once on the same cells
  local tag=$1 args=$2; shift 2; local i=0
  for c in "$@"; do BENCH_ARGS="$args" bench_run "$tag$i" --config "$c"; i=$((i + 1)); done
}
BENCH_S=60 run_ab hm_ "--width 2048 --heads 64,128 --batch 32,128,256" "$B" "$B,l2_prefetch=true" \
  "chunk_tokens=64,stages=3,gather=ld_global,scores=one,l2_prefetch=true"
BENCH_S=40 run_ab t16_ "--width 2048 --heads 16 --batch 128,256" "$R" "$R,l2_prefetch=true"
