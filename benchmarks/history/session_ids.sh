#!/usr/bin/env bash
# One device call: GPU suite (incl. the id-window tests), the ablation with the new "ids" drop,
# and default vs id-window configs side by side. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 170 python -m pytest tests/test_gpu_decode.py -q -x -k "not every_tunable" -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -3
for cfg in "" "stages=2,id_window=128" "stages=4,id_window=128"; do
  echo "== ablate config=${cfg:-tuned}"
  timeout 80 python -m cute_dsa ablate --batch 8,64,128 --heads 16,128 ${cfg:+--config $cfg} 2>&1 | grep "^|" | tee -a "$OUT/ablate.log"
done
for cfg in "" "stages=2,id_window=128" "stages=2,id_window=256"; do
  echo "== bench config=${cfg:-tuned}"
  timeout 90 python -m cute_dsa bench --no-torch --batch 1,8,64,128 --heads 16,128 --width 2048 --iters 15 ${cfg:+--config $cfg} --json "$OUT/bench${cfg:+_$cfg}.json" 2>&1 | grep -v "^\[\|Warn\|choice =" | tee -a "$OUT/bench.log"
done
