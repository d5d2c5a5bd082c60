#!/usr/bin/env bash
# One device call: the torch-ops GPU test (workspace-argument fix 877ec59), the pair config's
# correctness (benchmarks/pair_check.py: bitwise vs without pair, oracle, 65-128 heads), then
# 128 heads at W=2048: the pair config (stages PAIR_ST, default 3) forced vs the tuned choice, FlashMLA in both runs.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"; python -c "import torch; print(torch.cuda.get_device_name())"
timeout 100 python -m pytest tests/test_torch_ops.py -q -p no:cacheprovider --tb=short > "$OUT/pytest_ops.log" 2>&1
echo "torch-ops pytest rc=$?"; tail -1 "$OUT/pytest_ops.log"; grep "^FAILED\|^E " "$OUT/pytest_ops.log" | head -8
timeout 200 python benchmarks/pair_check.py ${PAIR_ST:-3} > "$OUT/pair_check.log" 2>&1
rc=$?; echo "pair_check rc=$rc"; grep -v "^\[\|Warn" "$OUT/pair_check.log" | tail -16
[ $rc = 0 ] || exit 1
B=${PAIR_BATCH:-8,32,64,128,256}
timeout 120 python -m cute_dsa bench --no-torch --iters 10 --width 2048 --heads 128 --batch $B --config "chunk_tokens=64,stages=${PAIR_ST:-3},gather=ld_global,scores=one,pair=true" --json "$OUT/pair.json" > "$OUT/pair.log" 2>&1
echo "bench pair rc=$?"; grep "^|\|geomean" "$OUT/pair.log" | cut -d"|" -f2-4,6,12,17,19,20,22
timeout 120 python -m cute_dsa bench --no-torch --iters 10 --width 2048 --heads 128 --batch $B --json "$OUT/tuned.json" > "$OUT/tuned.log" 2>&1
echo "bench tuned rc=$?"; grep "^|\|geomean" "$OUT/tuned.log" | cut -d"|" -f2-4,6,12,17,19,20,22
