#!/usr/bin/env bash
# Session A (2026-12-03): GPU suite + bench of the split-score kernel (default config), then an A/B
# of other configs and of the previous kernel on a subset of shapes.
bash benchmarks/gpu_check.sh --width 2048
source .carry/bootstrap.sh
sub="--no-flashmla --no-torch --width 2048 --batch 1,8,64,128 --heads 16,64,128"
for cfg in overlap=false chunk_tokens=16,stages=6,q_in_regs=true chunk_tokens=32,overlap=false,q_in_regs=true; do
  echo "== config $cfg"; timeout 90 python -m cute_dsa bench $sub --config $cfg --json "$OUT/bench_$cfg.json" 2>&1 | grep -v "^\["
done
echo "== previous kernel"; timeout 90 bash benchmarks/ab_old.sh $sub
