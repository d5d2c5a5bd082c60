#!/usr/bin/env bash
# Bench the previous kernel (saved as .carry/old_decode.py) on the same machine, for an A/B figure.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cp cute_dsa/kernels/sparse_decode.py /tmp/new_decode.py; cp cute_dsa/kernel_config.py /tmp/new_kc.py
cp .carry/old_decode.py cute_dsa/kernels/sparse_decode.py; cp .carry/old_kernel_config.py cute_dsa/kernel_config.py
python -m cute_dsa bench --no-flashmla --no-torch --json "$OUT/bench_old.json" "$@" 2>&1 | tee "$OUT/bench_old.log" | grep -v "^\["
cp /tmp/new_decode.py cute_dsa/kernels/sparse_decode.py; cp /tmp/new_kc.py cute_dsa/kernel_config.py
