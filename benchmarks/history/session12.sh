#!/usr/bin/env bash
# One device call: diagnose the torch.compile test failure (session 12's first call), run that test,
# then the issue-3 grid at WIDTH with the phys columns (session_phys.sh without its tests).
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 150 python benchmarks/compile_diag.py > "$OUT/diag.log" 2>&1; echo "diag rc=$?"; tail -40 "$OUT/diag.log"
timeout 100 python -m pytest tests/test_torch_ops.py -q -p no:cacheprovider -k compiled_model --tb=short > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -25 "$OUT/pytest.log"
SKIP_TESTS=1 BENCH_S=${BENCH_S:-300} bash benchmarks/history/session_phys.sh
