#!/usr/bin/env bash
# One device call: where the time of a call goes, by CUDA-graph replay (no launch gaps), at small
# batch (the whole call, each launch alone, decode + combine without the resolve launch) and at
# B=128. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 330 python -m cute_dsa ablate --graph --drops "" --batch 1,2,8 --heads 8,16,32,64,128 --width 2048 > "$OUT/ablate_small.log" 2>&1
echo "ablate small rc=$?"
timeout 150 python -m cute_dsa ablate --graph --drops "" --batch 128 --heads 8,32,64,128 --width 2048 > "$OUT/ablate_large.log" 2>&1
echo "ablate large rc=$?"
grep "^|\|timing" "$OUT/ablate_small.log" "$OUT/ablate_large.log" | cut -d: -f2-
