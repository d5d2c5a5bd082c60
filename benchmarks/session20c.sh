#!/usr/bin/env bash
# Device call (twentieth session, second resolve step): new_tree/ (an untracked export of the
# branch: `git archive BRANCH cute_dsa tests tuning pyproject.toml benchmarks/resolve_ab.py
# benchmarks/ncu_one_call.py benchmarks/ncu_summary.py benchmarks/gpu_lib.sh | tar x -C new_tree`)
# against this tree, on one machine, kernels from .carry/kcache.txz:
#  1. the new tree's resolve GPU tests; 2. the resolve launch alone (old; new at 1024 and 512
#  threads); 3. whole calls on logical ids in both trees (A_ARGS cells); 4. Nsight Compute of the
#  new resolve launch. Everything comes back as one archive.
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
in_tree "$NEW" python benchmarks/resolve_ab.py --label new --threads 1024,512 > "$OUT/resolve_new.log" 2>&1; echo "resolve_ab new rc=$?"
export BENCH_ARGS=${A_ARGS:---width 2048 --heads 64,128 --batch 32,128} BENCH_S=90
for rep in 1 2; do bench_run "old_cells_$rep"; in_tree "$NEW" bench_run "new_cells_$rep"; done
N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
in_tree "$NEW" timeout 120 "$N" --profile-from-start off -k regex:Resolve --set full --import-source no -f -o "$OUT/ncu_res_new" \
  python benchmarks/ncu_one_call.py ours 128 128 2048 32768 > "$OUT/ncu_res_new.log" 2>&1
"$N" --import "$OUT/ncu_res_new.ncu-rep" --page raw --csv > "$OUT/ncu_res_new_raw.csv" 2>/dev/null
"$N" --import "$OUT/ncu_res_new.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_res_new_src.csv" 2>/dev/null
python "$NEW/benchmarks/ncu_summary.py" "new=$OUT/ncu_res_new_raw.csv" --source "$OUT/ncu_res_new_src.csv" --top 12 2>&1 | cut -c1-200
cat "$OUT/resolve_old.log" "$OUT/resolve_new.log" | grep "^|" | sort -t"|" -k5,5n -k4,4n -s | uniq
(cd "$OUT" && tar czf /tmp/session20c.tgz --exclude="*.ncu-rep" --exclude=kcache.txz . && find . -mindepth 1 -delete && mv /tmp/session20c.tgz .)
