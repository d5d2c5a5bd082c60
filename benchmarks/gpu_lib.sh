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
# use_kernel_cache: unpack the carried kernel cache (.carry/kcache.txz, `cute-dsa precompile`) into
# /tmp/kcache and point CUTE_DSA_KERNEL_CACHE at it; a script started by one that already did keeps
# that cache (and the kernels its parent compiled into it).
use_kernel_cache() {
  [ "${CUTE_DSA_KERNEL_CACHE:-}" = /tmp/kcache ] && [ -d /tmp/kcache ] && return
  rm -rf /tmp/kcache && mkdir -p /tmp/kcache && tar xJf .carry/kcache.txz -C /tmp/kcache --strip-components=1
  export CUTE_DSA_KERNEL_CACHE=/tmp/kcache
}
# borrow_h200_table: sets GPU; on another GPU, the H200 tuning table renamed for it, so the same
# (precompiled) kernels run there: comparable with earlier H100 runs.
borrow_h200_table() {
  GPU=$(python -c "import torch; print(torch.cuda.get_device_name())"); echo "$GPU"
  case "$GPU" in *H200*) ;; *) sed "s/gpu: NVIDIA H200/gpu: $GPU/" tuning/NVIDIA_H200.yaml > /tmp/borrowed.yaml
    export CUTE_DSA_TUNING_FILE=/tmp/borrowed.yaml; echo "H200 tuning table borrowed" ;; esac
}
# bench_setup: the A/B scripts' start: OUT (default /tmp/out) made and exported, the carried kernel
# cache unpacked, GPU set (and the H200 table borrowed on another GPU).
bench_setup() {
  export OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
  use_kernel_cache
  borrow_h200_table
}
# bench_run NAME ARGS...: `cute-dsa bench` of the BENCH_ARGS cells (each checked against the oracle
# before it is timed) with ARGS, into $OUT/NAME.json and .log, at most BENCH_S seconds (default
# 120); prints the exit code, ARGS and the table's key columns.
bench_run() {
  local name=$1; shift
  [ "${BENCH_S:-120}" -gt 0 ] || { echo "== $name skipped: no time left"; return; }  # timeout 0 would not stop it
  timeout "${BENCH_S:-120}" python -m cute_dsa bench --no-torch --iters 10 $BENCH_ARGS "$@" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$? $*"; grep "^|\|geomean\|kernel cache" "$OUT/$name.log" | cut -d"|" -f2-4,6,12,17,19,20
}
# in_tree TREE CMD...: CMD (a command or one of these functions) in TREE, an untracked export of
# another commit, with that tree's package first on PYTHONPATH (bootstrap.sh put the repo root first).
in_tree() {
  local tree=$1; shift
  (cd "$tree" && PYTHONPATH=$PWD:${PYTHONPATH#*:} "$@")
}
# left MAX: the seconds a step of at most MAX seconds may take, cut to what is left of DEADLINE
# (default 570) seconds since the script started; 0 (skip the step) when under 20 are left.
left() {
  local l=$(( ${DEADLINE:-570} - SECONDS )); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 20 ] && l=0; echo "$l"
}
