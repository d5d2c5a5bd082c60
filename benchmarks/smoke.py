"""Quick GPU check of a few shapes against the oracle (a developer tool; the suite is tests/)."""
import time

import torch

import cute_dsa
from cute_dsa.reference import masked_attention
from cute_dsa.testing import make_inputs, relative_error

cases = [(1, 64, 2048, 1), (1, 64, 2048, None), (3, 8, 63, None), (4, 128, 2176, None), (2, 16, 2176, 3)]
for rows, heads, width, splits in cases:
    inp = make_inputs(rows, heads, width, seed=1, device="cuda", k_scale=0.8, v_scale=1.2)
    t = time.time()
    out, lse = cute_dsa.dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, num_splits=splits)
    torch.cuda.synchronize()
    dt = time.time() - t
    ro, rl = masked_attention(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale)
    fin = torch.isfinite(rl)
    print(f"rows={rows} H={heads} W={width} splits={splits}: rel={relative_error(out, ro):.3e} "
          f"lse={(lse.double()-rl)[fin].abs().max().item() if fin.any() else 0:.3e} nan={torch.isnan(out).sum().item()} first_call={dt:.1f}s",
          flush=True)
