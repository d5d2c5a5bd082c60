#!/usr/bin/env bash
# One device call: the heads-as-M test for every ld_global / one-scorer config of the GPU suite
# not run since the batched Q staging and the aligned load loop (n64 st4 w128 ran in
# session_final2.sh), then the ablation of the tuned 64-head config. Outputs land in $OUT.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 280 python -m pytest tests/test_gpu_decode.py -q -k "heads_as_m and not n64-st4-kv2-w128" -p no:cacheprovider > "$OUT/pytest.log" 2>&1; echo "pytest rc=$?"
tail -1 "$OUT/pytest.log"; grep "^FAILED\|passed\|failed" "$OUT/pytest.log" | head -8
timeout 45 python -m cute_dsa ablate --batch 128 --heads 64,128 --config "chunk_tokens=64,stages=4,gather=ld_global,scores=one,overlap=true" 2>&1 | grep "^|" | tee "$OUT/ablate.log"
