#!/usr/bin/env bash
# A/B device call: GPU tests of the working tree (TESTS, a pytest -k expression; none if empty),
# then the same bench cells (BENCH_ARGS, each cell oracle-checked; FORCED: also with that --config)
# on BASE (an untracked export of the base commit, e.g. `git archive HEAD cute_dsa tests tuning
# pyproject.toml | tar x -C base_tree`) and on the working tree, alternating, on one machine.
# FORCED_BASE: the base's --config where FORCED is new to the working tree (default FORCED).
# Kernels come from .carry/kcache.txz where it has them (`cute-dsa precompile` of both trees).
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
if [ -n "$TESTS" ]; then run_gpu_tests pytest_ab "${TEST_S:-240}" tests/test_gpu_decode.py -k "$TESTS" || exit 1; fi
bench() {  # bench TREE NAME [--config ...]: bench_run in TREE (its package first on PYTHONPATH)
  in_tree "$1" bench_run "${@:2}"
}
for rep in 1 2; do
  bench "${BASE:-base_tree}" "base_$rep"; bench . "new_$rep"
  [ -n "$FORCED" ] && { bench "${BASE:-base_tree}" "base_forced_$rep" --config "${FORCED_BASE:-$FORCED}"; bench . "new_forced_$rep" --config "$FORCED"; }
  [ -n "$ONCE" ] && break
done
[ -n "$GRID" ] && case "$GPU" in *H200*) WIDTHS="2048 2176" BENCH_S=${GRID_S:-200} bash benchmarks/session15.sh ;; esac
tar cJf "$OUT/kcache.txz" -C /tmp kcache
