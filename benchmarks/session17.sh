#!/usr/bin/env bash
# One device call (seventeenth session). First checks that the kernel cache built without a GPU
# (`python -m cute_dsa precompile --cache-dir /tmp/kcache_build`, carried as .carry/kcache.txz:
# `tar cJf .carry/kcache.txz -C /tmp kcache_build`; xz packs it ~18x) loads on this GPU
# and matches the oracle (a small bench: every cell is oracle-checked); if it does not, the rest
# compiles as before. Then session15.sh with the caller's settings (WIDTHS, PROFILE_CELLS, TESTS...).
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
O=${OUT:-/tmp/out}; mkdir -p "$O"
use_kernel_cache
export CUTE_DSA_COMMIT=${CUTE_DSA_COMMIT:-HEAD}
borrow_h200_table
ls "$CUTE_DSA_KERNEL_CACHE" | wc -l | xargs echo "kernel cache entries carried:"
timeout ${CHECK_S:-120} python -m cute_dsa bench --no-torch --no-flashmla --iters 3 --batch 1,64 --heads 8,64 --width 2048 \
  > "$O/kcache_check.log" 2>&1
rc=$?; echo "kernel-cache check rc=$rc"; grep "kernel cache\|^|" "$O/kcache_check.log" | cut -d"|" -f2-6,18-19
if [ $rc -ne 0 ]; then tail -15 "$O/kcache_check.log"; unset CUTE_DSA_KERNEL_CACHE; echo "kernel cache off: compiling"; fi
OUT=$O bash benchmarks/session15.sh
# Bring the cache back (entries compiled here included) for the next call's .carry/kcache.txz.
[ -n "$CUTE_DSA_KERNEL_CACHE" ] && tar cJf "$O/kcache.txz" -C /tmp kcache && ls /tmp/kcache | wc -l | xargs echo "kernel cache entries now:"
