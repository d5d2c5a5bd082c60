#!/usr/bin/env bash
# One device call (fifteenth session): GPU tests (TESTS, a pytest -k expression, and/or TESTS_FILE,
# a file of node ids; none if empty), then the issue-3 grid at each width of WIDTHS with the
# physical-ids columns (BENCH_ARGS narrows it), then optionally the graph-vs-events profile of
# PROFILE_CELLS and (ABLATE=1) the small-batch ablation. Every grid cell is checked against the oracle first.
# TREE: run all of it in that copy of the repo (an untracked export of another branch) instead.
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
if [ -n "$TREE" ]; then cd "$TREE" && export PYTHONPATH=$PWD:${PYTHONPATH#*:} || exit 1; fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
python -c "import torch, cute_dsa; print(torch.cuda.get_device_name(), cute_dsa.__file__)"
if [ -n "$TESTS" ]; then
  run_gpu_tests pytest "${TEST_S:-300}" tests/test_gpu_decode.py -k "$TESTS" || exit 1
fi
if [ -n "$TESTS_FILE" ]; then  # pytest node ids, one per line
  run_gpu_tests pytest_ids "${TEST_S:-300}" $(cat "$TESTS_FILE") || exit 1
fi
for W in ${WIDTHS:-}; do BENCH_S=${BENCH_S:-360} bench_run "grid_$W" --width "$W"; done
if [ -n "$PROFILE_CELLS" ]; then
  timeout ${PROFILE_S:-150} python benchmarks/graph_profile.py --cells "$PROFILE_CELLS" > "$OUT/graph_profile.log" 2>&1
  echo "graph_profile rc=$?"; tail -40 "$OUT/graph_profile.log"
fi
if [ -n "$ABLATE" ]; then
  timeout ${ABLATE_S:-200} python -m cute_dsa ablate --graph --drops "" --batch 1,2,8 --heads 8,16,32,64,128 --width "${ABLATE_W:-2048}" > "$OUT/ablate_small.log" 2>&1
  echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small.log" | cut -d"|" -f2-13
fi
