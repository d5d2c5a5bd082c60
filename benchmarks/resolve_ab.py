"""The resolve launch alone (ids -> cache rows, duplicates dropped), on the bench's inputs: graph
replay with the L2 flushed before each call, µs; each result checked against testing.physical_ids.

    python benchmarks/resolve_ab.py --batch 32,128,256 --width 2048 [--threads 512,1024]

--threads builds the kernel with other CTA sizes (compile.build_resolve's num_threads), where this
tree's build_resolve takes it; without it, the tree's own kernel (run it in two trees to A/B them).
"""
import argparse
import inspect

import torch

from cute_dsa import compile as kc
from cute_dsa.bench_inputs import make_bench_problem
from cute_dsa.heuristics import resolve_table_slots
from cute_dsa.testing import physical_ids
from cute_dsa.timing import L2Flusher, time_graph


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", default="1,8,32,128,256")
    ap.add_argument("--width", default="2048,2176")
    ap.add_argument("--threads", default="")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    flush = L2Flusher(torch.device("cuda"))
    threads = [int(t) for t in args.threads.split(",") if t] or [None]
    if threads != [None] and "num_threads" not in inspect.signature(kc.build_resolve).parameters:
        threads = [None]
    print("| tree | threads | B | W | resolve µs |\n|---|---|---|---|---|")
    for w in map(int, args.width.split(",")):
        for b in map(int, args.batch.split(",")):
            inp = make_bench_problem(b, 64, w).inputs
            num_blocks, block_size = inp.kv_cache.shape[0], inp.kv_cache.shape[1]
            want = physical_ids(inp)
            for t in threads:
                k = kc.resolve_kernel(resolve_table_slots(w)) if t is None else kc.build_resolve(resolve_table_slots(w), num_threads=t)
                out = torch.full_like(inp.indices, 7)

                def call():
                    k(inp.indices, inp.seq_lens, inp.block_table, out, block_size, num_blocks)

                call()
                torch.cuda.synchronize()
                ok = torch.equal(out, want)
                us = time_graph(call, flush)
                print(f"| {args.label} | {t or 'default'} | {b} | {w} | {us:.1f}{'' if ok else ' WRONG'} |", flush=True)


if __name__ == "__main__":
    main()
