#!/usr/bin/env bash
# One device call: register-fed tokens as M with the early slot hand-back (release_early, b2c94b3)
# against the oracle (every GPU test that runs it), then timed next to plain register-fed at the
# batches where it is the default. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RE="tiling=tokens_m,chunk_tokens=64,stages=4,convert=registers,id_window=128,release_early=true"
timeout 60 python benchmarks/diag.py 3 16 2176 "$RE,head_tile=16" 1 2>&1 | tail -2 || { echo "diag failed or hung"; exit 1; }
timeout 300 python -m pytest tests/test_gpu_decode.py -q -x -k "rf-re" -p no:cacheprovider > "$OUT/pytest_re.log" 2>&1; echo "pytest rc=$?"
tail -1 "$OUT/pytest_re.log"; grep -q " passed" "$OUT/pytest_re.log" && ! grep -q "failed\|error" "$OUT/pytest_re.log" || { grep -m5 "Error\|assert" "$OUT/pytest_re.log"; echo "GPU tests did not pass: no timing"; exit 1; }
for h in 8 16; do
  for v in "rf" "rf_re"; do
    cfg="tiling=tokens_m,chunk_tokens=64,stages=4,convert=registers,id_window=128,head_tile=$h"
    [ $v = rf_re ] && cfg="$cfg,release_early=true"
    timeout 60 python -m cute_dsa bench --no-torch --no-flashmla --iters 10 --batch 64,128,256 --heads $h --width 2048 \
      --config "$cfg" --json "$OUT/bench_${v}_t$h.json" > "$OUT/bench_${v}_t$h.log" 2>&1
    echo "== $v t$h rc=$?"; grep "^|" "$OUT/bench_${v}_t$h.log" | cut -d'|' -f2-4,6,11
  done
done
