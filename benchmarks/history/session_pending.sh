#!/usr/bin/env bash
# One device call: the whole GPU suite on the current commit (every tunable config included), the
# ablation CLI, and Q-in-registers (n16, overlap) against the default on four shapes.
set -o pipefail
source .carry/bootstrap.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 200 python -m pytest tests/test_gpu_decode.py -q -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -3
timeout 30 python -m cute_dsa ablate --batch 128 --heads 16 2>&1 | grep "^|" | tee "$OUT/ablate.log"
for cfg in "chunk_tokens=32" "chunk_tokens=16,q_in_regs=true,overlap=true" "chunk_tokens=16,q_in_regs=true"; do
  timeout 60 python -m cute_dsa bench --no-torch --no-flashmla --iters 10 --batch 8,64,128 --heads 16,64 --width 2048 --config "$cfg" > "$OUT/bench_$cfg.log" 2>&1
  echo "== $cfg rc=$?"; tail -8 "$OUT/bench_$cfg.log"
done
