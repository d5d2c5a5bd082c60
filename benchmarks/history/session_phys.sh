#!/usr/bin/env bash
# One device call: physical_indices=True (FlashMLA's contract, no resolve) and workspace= against the oracle and
# bitwise against the logical path, with the grid/holes/graph suites; then the issue-3 grid at one
# width (WIDTH, default 2048) with ours on logical ids, ours on FlashMLA's physical ids and FlashMLA.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
WIDTH=${WIDTH:-2048}
echo "commit ${CUTE_DSA_COMMIT:-?}"
if [ -z "$SKIP_TESTS" ]; then
  timeout 240 python -m pytest tests/test_gpu_decode.py tests/test_torch_ops.py -q -p no:cacheprovider -k "physical or resolve_indices or workspace or compiled_model or holes or all_duplicates or cuda_graph or current_stream or (test_grid and 64)" > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -8
  grep -q " passed" "$OUT/pytest.log" && ! grep -q "failed\|error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
fi
timeout ${BENCH_S:-330} python -m cute_dsa bench --no-torch --iters 10 --width "$WIDTH" ${BENCH_ARGS} --json "$OUT/grid_$WIDTH.json" > "$OUT/grid_$WIDTH.log" 2>&1
echo "bench rc=$?"; grep "^|\|geomean" "$OUT/grid_$WIDTH.log" | cut -d"|" -f2-4,6,12,17,19,20
