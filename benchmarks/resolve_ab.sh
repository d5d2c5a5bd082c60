#!/usr/bin/env bash
# Device call: a resolve-launch change (NEW, default new_tree/: an untracked export of its branch,
# `git archive BRANCH cute_dsa tests tuning pyproject.toml benchmarks/resolve_ab.py
# benchmarks/ncu_one_call.py benchmarks/ncu_summary.py benchmarks/gpu_lib.sh | tar x -C new_tree`)
# against this tree, on one machine, kernels from .carry/kcache.txz (both trees precompiled):
#  1. the new tree's resolve GPU tests (every block size; a physical decode of the output);
#  2. the launch alone, graph replay, L2 flushed (benchmarks/resolve_ab.py): old, new at THREADS;
#  3. whole calls on logical ids in both trees, REPS rounds (A_ARGS cells, oracle-checked);
#  4. with GRID=1, the whole grid in the new tree at WIDTHS;
#  5. Nsight Compute of the resolve launch of each tree in NCU_TREES ("old new").
# Everything comes back as one archive. The twentieth session ran it as session20b.sh
# (GRID=1 A_ARGS="--width 2176 --heads 16,128 --batch 1,32,128" THREADS=512,1024 REPS=1) and
# session20c.sh (NCU_TREES=new REPS=2).
set -o pipefail
source .carry/bootstrap.sh
source benchmarks/gpu_lib.sh
bench_setup
NEW=${NEW:-new_tree}
in_tree "$NEW" run_gpu_tests pytest_resolve "${TEST_S:-200}" tests/test_gpu_decode.py -k "resolve_indices" || exit 1
python "$NEW/benchmarks/resolve_ab.py" --label old > "$OUT/resolve_old.log" 2>&1; echo "resolve_ab old rc=$?"
in_tree "$NEW" python benchmarks/resolve_ab.py --label new --threads "${THREADS:-1024,512}" > "$OUT/resolve_new.log" 2>&1; echo "resolve_ab new rc=$?"
export BENCH_ARGS=${A_ARGS:---width 2048 --heads 64,128 --batch 32,128} BENCH_S=90
for rep in $(seq 1 "${REPS:-2}"); do bench_run "old_cells_$rep"; in_tree "$NEW" bench_run "new_cells_$rep"; done
if [ -n "$GRID" ]; then
  for W in ${WIDTHS-2048 2176}; do BENCH_ARGS= BENCH_S=${GRID_S:-150} in_tree "$NEW" bench_run "new_grid_$W" --width "$W"; done
fi
N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for t in ${NCU_TREES-old new}; do
  tree=.; [ "$t" = new ] && tree=$NEW
  in_tree "$tree" timeout 120 "$N" --profile-from-start off -k regex:Resolve --set full --import-source no -f -o "$OUT/ncu_res_$t" \
    python "$PWD/$NEW/benchmarks/ncu_one_call.py" ours 128 128 2048 32768 > "$OUT/ncu_res_$t.log" 2>&1
  "$N" --import "$OUT/ncu_res_$t.ncu-rep" --page raw --csv > "$OUT/ncu_res_${t}_raw.csv" 2>/dev/null
  "$N" --import "$OUT/ncu_res_$t.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_res_${t}_src.csv" 2>/dev/null
  python "$NEW/benchmarks/ncu_summary.py" "$t=$OUT/ncu_res_${t}_raw.csv" --source "$OUT/ncu_res_${t}_src.csv" --top 12 2>&1 | cut -c1-200
done
cat "$OUT/resolve_old.log" "$OUT/resolve_new.log" | grep "^|" | sort -t"|" -k5,5n -k4,4n -s | uniq
(cd "$OUT" && tar czf /tmp/resolve_ab.tgz --exclude="*.ncu-rep" --exclude=kcache.txz . && find . -mindepth 1 -delete && mv /tmp/resolve_ab.tgz .)
