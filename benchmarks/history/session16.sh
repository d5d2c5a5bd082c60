#!/usr/bin/env bash
# One device call (sixteenth session), for a small device budget: the WIP branch's GPU tests
# (wip_tree/, an untracked export of wip/ids-masked-at-use) and its small-batch cells, the same
# cells at HEAD on the same machine, then (GRID=1, H200 only) HEAD's W=2048 grid, then the
# graph-vs-events profile. Each step has its own time limit so a slow one cannot eat the rest.
source .carry/bootstrap.sh
O=${OUT:-/tmp/out}
SMALL="--batch 1,2,8 --heads 16,32"
export CUTE_DSA_COMMIT=${CUTE_DSA_COMMIT:-HEAD}  # the label of HEAD's steps; the WIP step names its own
TREE=wip_tree CUTE_DSA_COMMIT=wip-036d3b7 TESTS_FILE=benchmarks/session15_tests.txt TEST_S=${TEST_S:-150} \
  WIDTHS=2048 BENCH_ARGS="$SMALL" BENCH_S=70 OUT=$O/wip bash benchmarks/session15.sh
WIDTHS=2048 BENCH_ARGS="$SMALL" BENCH_S=70 OUT=$O/head bash benchmarks/session15.sh
if [ -n "$GRID" ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  WIDTHS=2048 BENCH_S=${GRID_S:-170} OUT=$O/grid bash benchmarks/session15.sh
fi
PROFILE_CELLS=1x128x2048,1x8x2048 PROFILE_S=60 OUT=$O/profile bash benchmarks/session15.sh
