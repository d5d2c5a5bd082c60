#!/usr/bin/env bash
# One device call (fourteenth session): the physical-ids decode with its out-of-cache check moved
# off the id loads. The physical-ids GPU tests, the decode alone as the logical and the _phys
# variant on the same ids (benchmarks/phys_variant.py), then bench cells with the phys columns.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 240 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "physical" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED\|^ERROR" "$OUT/pytest.log" | head -8
grep -q " passed" "$OUT/pytest.log" && ! grep -q " failed\| error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 120 python benchmarks/phys_variant.py 128x128 256x64 256x8 64x16 2>&1 | grep "^|\|NVIDIA"
timeout ${BENCH_S:-200} python -m cute_dsa bench --no-torch --iters 10 --width 2048 --heads ${HEADS:-8,32,64,128} --batch ${BATCH:-1,8,128,256} --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
echo "bench rc=$?"; grep "^|\|geomean" "$OUT/bench.log" | cut -d"|" -f2-3,6,12,17,19,20
