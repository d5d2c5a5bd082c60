#!/usr/bin/env bash
# Session A (2026-12-03): GPU suite + bench of the split-score kernel, then A/B against the
# overlap-off config and the previous kernel on a subset.
bash benchmarks/gpu_check.sh --width 2048
source .carry/bootstrap.sh
python -m cute_dsa bench --no-flashmla --no-torch --width 2048 --batch 1,8,64,128 --heads 16,64,128 --config overlap=false 2>&1 | grep -v "^\[" | tee $OUT/bench_seq.log
bash benchmarks/ab_old.sh --width 2048 --batch 1,8,64,128 --heads 16,64,128
