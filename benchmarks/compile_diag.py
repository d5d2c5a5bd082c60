"""The diagnosis behind session 12's first device call (benchmarks/history/session12.sh): is the plain call
deterministic, does the eager op match it, and does the torch.compile'd op (fullgraph on and off)
match it or raise? Printed step by step; tests/test_torch_ops.py holds the lasting check."""
import traceback

import torch

import cute_dsa
from cute_dsa.testing import make_inputs

print("torch", torch.__version__)
inp = make_inputs(4, 64, 2048, seed=9, device="cuda", k_scale=0.7)
ks = torch.tensor([0.7], dtype=torch.float32, device="cuda")
ref_o, ref_l = cute_dsa.dsa_decode(*inp.args(), k_scale=ks)
o2, l2 = cute_dsa.dsa_decode(*inp.args(), k_scale=ks)
print("eager twice equal:", torch.equal(o2, ref_o), torch.equal(l2, ref_l))
o3, l3 = torch.ops.cute_dsa.dsa_decode(*inp.args(), 1.0, 1.0, ks, None, -1.0, 1, False)
print("op eager equal:", torch.equal(o3, ref_o), torch.equal(l3, ref_l))


def f(q, cache, table, lens, ids):
    return torch.ops.cute_dsa.dsa_decode(q, cache, table, lens, ids, 1.0, 1.0, ks, None, -1.0, 1, False)


for fullgraph in (True, False):
    try:
        o, l = torch.compile(f, fullgraph=fullgraph)(*inp.args())
        torch.cuda.synchronize()
        print(f"compiled fullgraph={fullgraph}: equal", torch.equal(o, ref_o), torch.equal(l, ref_l),
              "max|do|", (o.float() - ref_o.float()).abs().max().item(), "max|dl|", (l - ref_l).abs().max().item(),
              "nan", o.isnan().any().item(), l.isnan().any().item(), o.shape, o.stride(), l.shape, l.stride())
    except Exception:
        print(f"compiled fullgraph={fullgraph}: EXCEPTION")
        traceback.print_exc(limit=-12)
