"""Why is our call on physical ids slower than on logical ids at large batch (same kernel, same
bits)? Times, CUDA-graph replay with the L2 flushed before each call (cute_dsa.timing):

* logical: dsa_decode on the logical ids (resolve launch + decode);
* phys: dsa_decode(physical_indices=True) on the bench's physical ids (decode alone);
* phys(resolved): the same on the resolve kernel's output (is the data different?);
* phys+gap: a kernel between the flush and the decode (is it the flush's dirty lines?);
* phys+warm ids: the ids read into L2 between the flush and the decode (is it their latency?);
* FlashMLA, and both flushes: the default write flush (fill_) and a read flush (sum).
"""

import sys

import torch

from cute_dsa import compile as kc
from cute_dsa.api import dsa_decode
from cute_dsa.bench import SOFTMAX_SCALE
from cute_dsa.bench_inputs import make_bench_problem
from cute_dsa.heuristics import resolve_table_slots
from cute_dsa.timing import L2_FLUSH_BYTES, L2Flusher, time_graph


class ReadFlush:
    def __init__(self, dev):
        self.buf = torch.ones(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=dev)
        self.acc = torch.empty((), dtype=torch.int64, device=dev)

    def __call__(self):
        torch.sum(self.buf, dim=0, dtype=torch.int64, out=self.acc)  # reads every line: the L2 ends clean


def main(shapes):
    dev = torch.device("cuda")
    print(torch.cuda.get_device_name())
    flushes = {"write": L2Flusher(dev), "read": ReadFlush(dev)}
    try:
        from cute_dsa.peers import setup_flashmla
    except Exception:  # noqa: BLE001
        setup_flashmla = None
    gap_buf = torch.empty(8 << 20, dtype=torch.float32, device=dev)
    acc = torch.empty((), dtype=torch.int64, device=dev)
    print("| B | H | flush | logical | phys | phys(resolved) | phys+gap | gap alone | phys+warm ids | warm alone | FlashMLA | FlashMLA+gap | ids equal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for b, h in shapes:
        p = make_bench_problem(b, h, 2048, context=32768, page=64, seed=b * 7 + h + 2048)
        inp = p.inputs
        out = torch.empty(b, h, 512, dtype=torch.bfloat16, device=dev)
        lse = torch.empty(b, h, dtype=torch.float32, device=dev)
        res = kc.resolve_kernel(resolve_table_slots(2048))
        num_blocks, bs = inp.kv_cache.shape[0], inp.kv_cache.shape[1]
        phys_r = torch.empty_like(inp.indices)
        res(inp.indices, inp.seq_lens, inp.block_table, phys_r, bs, num_blocks)
        torch.cuda.synchronize()
        same = bool(torch.equal(phys_r, p.phys))

        def call(ids, physical):
            return lambda: dsa_decode(inp.q, inp.kv_cache, inp.block_table, inp.seq_lens, ids, k_scale=inp.k_scale,
                                      v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE, out=out, lse=lse,
                                      physical_indices=physical)

        def gap():
            gap_buf.mul_(1.0001)  # 32 MB read + written: the L2's dirty lines drain meanwhile

        def warm():
            torch.sum(p.phys.view(-1), dim=0, dtype=torch.int64, out=acc)  # the ids into L2

        fm = setup_flashmla(p, SOFTMAX_SCALE) if setup_flashmla is not None else None
        for name, fl in flushes.items():
            t = {
                "logical": time_graph(call(inp.indices, False), fl),
                "phys": time_graph(call(p.phys, True), fl),
                "phys(resolved)": time_graph(call(phys_r, True), fl),
                "phys+gap": time_graph(lambda: (gap(), call(p.phys, True)()), fl),
                "gap": time_graph(gap, fl),
                "warm": time_graph(lambda: (warm(), call(p.phys, True)()), fl),
                "warm alone": time_graph(warm, fl),
            }
            if fm is not None:
                t["fm"] = time_graph(fm, fl)
                t["fm+gap"] = time_graph(lambda: (gap(), fm()), fl)
            cells = [f"{t.get(k, float('nan')):.1f}" for k in ("logical", "phys", "phys(resolved)", "phys+gap", "gap", "warm", "warm alone", "fm", "fm+gap")]
            print(f"| {b} | {h} | {name} | " + " | ".join(cells) + f" | {same} |", flush=True)
        del p, inp
        torch.cuda.empty_cache()


if __name__ == "__main__":
    shapes = [tuple(map(int, s.split("x"))) for s in (sys.argv[1:] or ["128x128", "256x128", "256x64", "8x128"])]
    main(shapes)
