"""One decode (or FlashMLA's) under Nsight Compute: python benchmarks/ncu_one_call.py ours|flashmla B H W [CONTEXT [FUSE]]
(Not `profile.py`: that name shadowed the standard library module for scripts run from this folder.)

FUSE: dsa_decode's fuse_resolve (auto, off, on, slice, stream).

Builds the bench problem, warms the call up (compiles), then runs it once between
cudaProfilerStart/Stop, so `ncu --profile-from-start off` sees exactly one call's kernels.
"""
import sys

import torch

from cute_dsa.api import dsa_decode
from cute_dsa.bench import SOFTMAX_SCALE
from cute_dsa.bench_inputs import make_bench_problem
from cute_dsa.peers import setup_flashmla

who = sys.argv[1]
b, h, w = map(int, sys.argv[2:5])
ctx = int(sys.argv[5]) if len(sys.argv) > 5 else 8192
p = make_bench_problem(b, h, w, context=ctx)
fuse = {"auto": None, "off": False, "on": True}.get(sys.argv[6], sys.argv[6]) if len(sys.argv) > 6 else None
inp = p.inputs


def ours():
    return dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE, fuse_resolve=fuse)


call = ours if who == "ours" else setup_flashmla(p, SOFTMAX_SCALE)
for _ in range(3):
    call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print(f"profiled {who} B={b} H={h} W={w} context={ctx} fuse_resolve={fuse!r}")
