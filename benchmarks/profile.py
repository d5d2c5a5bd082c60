"""One decode (or FlashMLA's) under Nsight Compute: python benchmarks/profile.py ours|flashmla B H W [CONTEXT]

Builds the bench problem, warms the call up (compiles), then runs it once between
cudaProfilerStart/Stop, so `ncu --profile-from-start off` sees exactly one call's kernels.
"""
import sys

import torch

from cute_dsa.bench import SOFTMAX_SCALE, ours_call
from cute_dsa.bench_inputs import make_bench_problem
from cute_dsa.peers import setup_flashmla

who = sys.argv[1]
b, h, w = map(int, sys.argv[2:5])
ctx = int(sys.argv[5]) if len(sys.argv) > 5 else 8192
p = make_bench_problem(b, h, w, context=ctx)
call = ours_call(p) if who == "ours" else setup_flashmla(p, SOFTMAX_SCALE)
for _ in range(3):
    call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print(f"profiled {who} B={b} H={h} W={w} context={ctx}")
