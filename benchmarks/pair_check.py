"""GPU check of the pair config (two head tiles of a cluster share the gather): bitwise against
the same config without pair and against the oracle, logical and physical ids, 65-128 heads,
direct and split (a developer tool; the suite is tests/)."""
import sys
from dataclasses import replace

import torch

import cute_dsa
from cute_dsa.kernel_config import DecodeKernelConfig
from cute_dsa.reference import masked_attention
from cute_dsa.testing import make_inputs, physical_ids, relative_error

stages = int(sys.argv[1]) if len(sys.argv) > 1 else 3
pair = DecodeKernelConfig(chunk_tokens=64, stages=stages, gather="ld_global", scores="one", pair=True).validate()
solo = replace(pair, pair=False)
bad = 0
for rows, heads, width, splits in [(2, 128, 2048, 1), (2, 128, 2048, 4), (3, 100, 1000, 3), (64, 128, 2048, 1),
                                   (5, 65, 2176, 2), (1, 128, 64, 1), (2, 128, 130, 1)]:
    inp = make_inputs(rows, heads, width, seed=rows + heads, device="cuda", k_scale=0.8, v_scale=1.2, context=8192)
    for phys in (False, True):
        ids = physical_ids(inp) if phys else inp.indices
        args = (inp.q, inp.kv_cache, inp.block_table, inp.seq_lens, ids)
        kw = dict(k_scale=inp.k_scale, v_scale=inp.v_scale, num_splits=splits, physical_indices=phys, return_lse=True)
        o1, l1 = cute_dsa.dsa_decode(*args, config=pair, **kw)
        o0, l0 = cute_dsa.dsa_decode(*args, config=solo, **kw)
        torch.cuda.synchronize()
        ro, rl = masked_attention(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale)
        same = torch.equal(o1, o0) and torch.equal(l1.nan_to_num(), l0.nan_to_num())
        err = relative_error(o1, ro)
        ok = same and err < 2e-2
        bad += not ok
        print(f"B={rows} H={heads} W={width} splits={splits} phys={phys}: bitwise={same} rel={err:.2e} {'ok' if ok else 'FAIL'}", flush=True)
print("pair check:", "FAILED" if bad else "passed", f"({bad} bad)")
sys.exit(1 if bad else 0)
