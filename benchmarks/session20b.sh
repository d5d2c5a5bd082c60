#!/usr/bin/env bash
# Device call (twentieth session): the new resolve launch (new_tree/, an untracked export of the
# branch: `git archive BRANCH cute_dsa tests tuning pyproject.toml benchmarks | tar x -C new_tree`)
# against this tree's, on one machine, kernels from .carry/kcache.txz (both trees precompiled):
#  1. the new tree's resolve GPU tests (every block size; then a physical decode of its output);
#  2. the resolve launch alone, graph replay, L2 flushed: old, new at 512 and 1024 threads;
#  3. whole calls on logical ids in both trees (A_ARGS cells, oracle-checked);
#  4. the whole grid in the new tree, both widths;
#  5. Nsight Compute on both resolve launches.
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
NEW=${NEW:-new_tree}
in_tree() {  # in_tree TREE CMD...: CMD in TREE with its package first on PYTHONPATH
  local tree=$1; shift
  (cd "$tree" && PYTHONPATH=$PWD:${PYTHONPATH#*:} "$@")
}
in_tree "$NEW" run_gpu_tests pytest_resolve "${TEST_S:-200}" tests/test_gpu_decode.py -k "resolve_indices" || exit 1
python "$NEW/benchmarks/resolve_ab.py" --label old > "$OUT/resolve_old.log" 2>&1; echo "resolve_ab old rc=$?"
in_tree "$NEW" python benchmarks/resolve_ab.py --label new --threads 512,1024 > "$OUT/resolve_new.log" 2>&1; echo "resolve_ab new rc=$?"
export BENCH_ARGS=${A_ARGS:---width 2176 --heads 16,128 --batch 1,32,128} BENCH_S=90
bench_run old_cells
in_tree "$NEW" bench_run new_cells
for W in ${WIDTHS-2048 2176}; do
  in_tree "$NEW" timeout "${GRID_S:-150}" python -m cute_dsa bench --no-torch --iters 10 --width "$W" --json "$OUT/new_grid_$W.json" > "$OUT/new_grid_$W.log" 2>&1
  echo "new grid W=$W rc=$?"; grep "geomean\|kernel cache" "$OUT/new_grid_$W.log"
done
# 5. Nsight Compute on each tree's resolve launch (B=128 H=128 W=2048): counters and hottest SASS.
N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for t in old new; do
  tree=.; [ $t = new ] && tree=$NEW
  in_tree "$tree" timeout 120 "$N" --profile-from-start off -k regex:Resolve --set full --import-source no -f -o "$OUT/ncu_res_$t" \
    python "$PWD/$NEW/benchmarks/ncu_one_call.py" ours 128 128 2048 32768 > "$OUT/ncu_res_$t.log" 2>&1
  "$N" --import "$OUT/ncu_res_$t.ncu-rep" --page raw --csv > "$OUT/ncu_res_${t}_raw.csv" 2>/dev/null
  "$N" --import "$OUT/ncu_res_$t.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_res_${t}_src.csv" 2>/dev/null
  python "$NEW/benchmarks/ncu_summary.py" "$t=$OUT/ncu_res_${t}_raw.csv" --source "$OUT/ncu_res_${t}_src.csv" --top 12 2>&1 | cut -c1-220
done
cat "$OUT/resolve_old.log" "$OUT/resolve_new.log" | grep "^|" | sort -t"|" -k5,5n -k4,4n -s | uniq
# Everything in one archive (the device hands back few files).
(cd "$OUT" && tar czf /tmp/session20b.tgz --exclude="*.ncu-rep" --exclude=kcache.txz . && find . -mindepth 1 -delete && mv /tmp/session20b.tgz .)
