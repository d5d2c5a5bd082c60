"""Follow-up of phys_gap.py: the decode kernel alone (no resolve launch, no PDL predecessor) on the
resolved ids, compiled as the logical-ids variant and as the physical-ids (`_phys`) variant, the
resolve launch alone, and the two calls. Graph replay, L2 flushed (write), µs."""

import sys
from dataclasses import replace

import torch

from cute_dsa import compile as kc
from cute_dsa.api import cache_operand, dsa_decode, launch_plan
from cute_dsa.bench import SOFTMAX_SCALE
from cute_dsa.bench_inputs import make_bench_problem
from cute_dsa.checks import check_decode_args
from cute_dsa.heuristics import resolve_table_slots
from cute_dsa.timing import L2Flusher, time_graph


def main(shapes):
    dev = torch.device("cuda")
    print(torch.cuda.get_device_name())
    fl = L2Flusher(dev)
    print("| B | H | call logical | call phys | resolve | decode (logical variant) | decode (_phys variant) | same bits |")
    print("|---|---|---|---|---|---|---|---|")
    for b, h in shapes:
        p = make_bench_problem(b, h, 2048, context=32768, page=64, seed=b * 7 + h + 2048)
        inp = p.inputs
        problem = check_decode_args(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=None,
                                    index_kpool=1, out=None, lse=None)
        plan = launch_plan(problem, dev, None, None, True)
        assert plan.splits == 1, plan
        res = kc.resolve_kernel(resolve_table_slots(2048))
        phys = torch.empty_like(inp.indices)
        res(inp.indices, inp.seq_lens, inp.block_table, phys, problem.block_size, problem.num_blocks)
        cache = cache_operand(inp.kv_cache, problem)
        outs = {}

        def dec(physical):
            v = replace(plan.variant, fused_resolve=False, stream_resolve=False, physical_ids=physical)
            k = kc.decode_kernel(v)
            o = torch.empty(b, h, 512, dtype=torch.bfloat16, device=dev)
            lse = torch.empty(b, h, dtype=torch.float32, device=dev)
            outs[physical] = o
            return lambda: k(inp.q, cache, phys, inp.indices, inp.seq_lens, inp.block_table, inp.k_scale, inp.v_scale,
                             SOFTMAX_SCALE, o, lse, plan.split_len, 1, problem.block_size, problem.num_blocks)

        out = torch.empty(b, h, 512, dtype=torch.bfloat16, device=dev)
        lse = torch.empty(b, h, dtype=torch.float32, device=dev)

        def call(ids, physical):
            return lambda: dsa_decode(inp.q, inp.kv_cache, inp.block_table, inp.seq_lens, ids, k_scale=inp.k_scale,
                                      v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE, out=out, lse=lse,
                                      physical_indices=physical)

        t = [time_graph(call(inp.indices, False), fl), time_graph(call(p.phys, True), fl),
             time_graph(lambda: res(inp.indices, inp.seq_lens, inp.block_table, phys, problem.block_size, problem.num_blocks), fl),
             time_graph(dec(False), fl), time_graph(dec(True), fl)]
        same = bool(torch.equal(outs[False], outs[True]))
        print(f"| {b} | {h} | " + " | ".join(f"{x:.1f}" for x in t) + f" | {same} |", flush=True)


if __name__ == "__main__":
    main([tuple(map(int, s.split("x"))) for s in (sys.argv[1:] or ["128x128", "256x64"])])
