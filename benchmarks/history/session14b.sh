#!/usr/bin/env bash
# One device call (fourteenth session): heads-as-M O stores staged through shared memory (16-byte
# row stores instead of scalar stores). The heads-as-M GPU tests, then the same 64/128-head cells
# timed with the code before the change (BASELINE: a directory holding that commit's cute_dsa/ and
# tuning/) and after it, FlashMLA in both runs.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?} baseline ${BASELINE:-none}"
python -c "import torch; print(torch.cuda.get_device_name())"
if [ -z "$SKIP_TESTS" ]; then
  timeout ${TEST_S:-300} python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -x -k "${TESTS:-heads_as_m or pair or holes or all_duplicates or forced_splits or (physical_indices_give and 128)}" > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED\|^ERROR" "$OUT/pytest.log" | head -8
  grep -q " passed" "$OUT/pytest.log" && ! grep -q " failed\| error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
fi
ARGS="--no-torch --iters 10 --width ${WIDTH:-2048} --heads ${HEADS:-64,128} --batch ${BATCH:-1,8,32,128,256}"
for side in new base; do
  if [ "$side" = base ]; then [ -n "$BASELINE" ] || continue; PP="$PWD/$BASELINE:$PYTHONPATH"; else PP="$PYTHONPATH"; fi
  PYTHONPATH="$PP" timeout ${BENCH_S:-150} python -m cute_dsa bench $ARGS --json "$OUT/ab_$side.json" > "$OUT/ab_$side.log" 2>&1
  echo "bench $side rc=$?"; grep "^|\|geomean" "$OUT/ab_$side.log" | cut -d"|" -f2-3,6,12,17,19,20
done
