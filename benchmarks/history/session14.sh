#!/usr/bin/env bash
# One device call (fourteenth session): the issue-3 grid at one width (WIDTH, default 2048; WIDTHS a list) with the
# physical-ids columns on the current HEAD (small splits now resolve streamed or by the launch),
# then the small-batch ablation: the call with the slice resolve, streamed, and with the launch,
# with the decode and combine on their own. Every grid cell is checked against the oracle first.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
python -c "import torch; print(torch.cuda.get_device_name())"
WIDTH=${WIDTH:-2048}
for W in ${WIDTHS:-$WIDTH}; do
  timeout ${BENCH_S:-360} python -m cute_dsa bench --no-torch --iters 10 --width "$W" ${BENCH_ARGS} --json "$OUT/grid_$W.json" > "$OUT/grid_$W.log" 2>&1
  echo "bench W=$W rc=$?"; grep "^|\|geomean" "$OUT/grid_$W.log" | cut -d"|" -f2-4,6,12,17,19,20
done
if [ -z "$SKIP_ABLATE" ]; then
  timeout ${ABLATE_S:-200} python -m cute_dsa ablate --graph --drops "" --batch 1,2,8 --heads 8,16,32,64,128 --width "$WIDTH" > "$OUT/ablate_small.log" 2>&1
  echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_small.log" | cut -d"|" -f2-13
fi
