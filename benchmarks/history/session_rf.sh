#!/usr/bin/env bash
# One device call: tokens as M with register-fed consumers (convert=registers: raw FP8 rows straight
# into wgmma A fragments, no FP16 K/V tiles) against the oracle, then timed next to the current
# default and FlashMLA; its ablation. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RF="tiling=tokens_m,chunk_tokens=64,stages=4,convert=registers"
timeout 60 python benchmarks/diag.py 3 16 2176 "$RF,head_tile=16" 1 2>&1 | tail -2 || { echo "diag failed or hung"; exit 1; }
timeout 240 python -m pytest tests/test_gpu_decode.py -q -x -k "tokens_as_m" -p no:cacheprovider > "$OUT/pytest_rf.log" 2>&1; echo "pytest rc=$?"
tail -1 "$OUT/pytest_rf.log"; grep -q " passed" "$OUT/pytest_rf.log" && ! grep -q "failed\|error" "$OUT/pytest_rf.log" || { grep -m5 "Error\|assert" "$OUT/pytest_rf.log"; echo "GPU tests did not pass: no timing"; exit 1; }
for h in 8 16 32; do
  timeout 70 python -m cute_dsa bench --no-torch --iters 10 --batch 1,8,64,128,256 --heads $h --width 2048 \
    --config "$RF,head_tile=$h" --json "$OUT/bench_rf_t$h.json" > "$OUT/bench_rf_t$h.log" 2>&1
  echo "== rf t$h rc=$?"; grep "^|" "$OUT/bench_rf_t$h.log" | cut -d'|' -f2-4,6,11,15,17
done
timeout 40 python -m cute_dsa ablate --batch 128 --heads 16 --config "$RF,head_tile=16" 2>&1 | grep "^|" | tee "$OUT/ablate_rf.log"
