#!/usr/bin/env bash
# One device call: the decode resolving its own ids with a table sized to the split (up to 4096
# positions): bitwise against the two-launch path from one split of all 2176 positions to 32, and
# the test grid (B=130 now resolves in the decode with one split); then, by graph replay, whether
# one split resolving its own ids beats the resolve launch at 64-256 rows. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
echo "commit ${CUTE_DSA_COMMIT:-?}"
timeout 200 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider -k "resolving_its_own_ids or test_grid or holes or all_duplicates" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"; tail -1 "$OUT/pytest.log"; grep "^FAILED" "$OUT/pytest.log" | head -8
grep -q " passed" "$OUT/pytest.log" && ! grep -q "failed\|error" "$OUT/pytest.log" || { echo "GPU tests did not pass: no timing"; exit 1; }
timeout 150 python -m cute_dsa ablate --graph --drops "" --batch 64,128,256 --heads 8,16,64,128 --width 2048 > "$OUT/ablate_large.log" 2>&1
echo "ablate rc=$?"; grep "^|\|timing" "$OUT/ablate_large.log"
