#!/usr/bin/env bash
# One device call: the whole GPU suite on the current commit (both tilings, every tunable config,
# graph capture, device scales, the >2 GiB cache), then the ablation of heads as M at 64/128 heads.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 470 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider --durations=5 > "$OUT/pytest.log" 2>&1; echo "pytest rc=$?"
grep -E "passed|failed|FAILED|Error" "$OUT/pytest.log" | tail -12
for h in 64 128; do
  timeout 40 python -m cute_dsa ablate --batch 128 --heads $h 2>&1 | grep "^|" | tee "$OUT/ablate_h$h.log"
done
