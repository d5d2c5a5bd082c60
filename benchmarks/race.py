"""Does a torch allocation right after dsa_decode (no sync) clobber its workspaces? argv[1]: sync first."""
import sys
import torch
from cute_dsa.api import dsa_decode
from cute_dsa.bench import SOFTMAX_SCALE, check_rows
from cute_dsa.bench_inputs import make_bench_problem

p = make_bench_problem(1, 16, 2048)
inp = p.inputs
call = lambda: dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE)
call()
torch.cuda.synchronize()
print("stream", torch.cuda.current_stream(), flush=True)
for i in range(5):
    out, _ = call()
    if sys.argv[1] == "1":
        torch.cuda.synchronize()
    junk = [torch.full((1 << 16,), -(1 << 30), dtype=torch.int32, device="cuda") for _ in range(20)]
torch.cuda.synchronize()
print("sync" if sys.argv[1] == "1" else "nosync", "ok", flush=True)
