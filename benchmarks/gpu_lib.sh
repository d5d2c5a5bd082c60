# Shared steps of the device-call scripts (source it after .carry/bootstrap.sh).
# run_gpu_tests NAME TIMEOUT PYTEST_ARGS...: runs pytest into $OUT/NAME.log, prints its summary and
# failures, and returns non-zero unless something passed and nothing failed or errored (pytest's
# exit code 5, no tests selected, is a failure too), so a script stops before timing broken code.
run_gpu_tests() {
  local name=$1 limit=$2; shift 2
  timeout "$limit" python -m pytest -q -p no:cacheprovider "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "pytest $name rc=$rc"; tail -1 "$OUT/$name.log"; grep "^FAILED\|^ERROR" "$OUT/$name.log" | head -8
  [ $rc -eq 0 ] && grep -q " passed" "$OUT/$name.log" || { echo "GPU tests $name did not pass: no timing"; return 1; }
}
