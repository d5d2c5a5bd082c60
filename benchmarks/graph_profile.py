"""Why are some B=1 calls slower under CUDA-graph replay than by CUDA events (fifteenth session)?

For each cell: CUDA-event median (`time_cold`), graph figure (`time_graph`), the graph figure with
a tiny kernel between the flush and the call (the decode's programmatic launch then follows that
kernel instead of the 256 MB fill), and the kernels' own durations inside a replay of the graph
(torch.profiler / CUPTI): which kernel grows, or whether the time is a gap between kernels.

    python benchmarks/graph_profile.py --cells 1x128x2048,1x64x2048,1x8x2176,2x128x2048
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

import torch

from cute_dsa.bench import ours_call
from cute_dsa.bench_inputs import make_bench_problem
from cute_dsa.timing import L2Flusher, capture_graph, time_cold, time_graph


def _is_flush(event) -> bool:
    return "fill" in event.name.lower()  # L2Flusher's buf.fill_ (FillFunctor)


def kernel_times(fn, flush, calls=10):
    """Median duration per kernel name, the median gap from each flush's end to the next kernel's
    start, and the median span from one flush's end to the next flush's start (the whole call),
    over one replay of a graph of `calls` x (flush, fn)."""
    g = capture_graph(lambda: (flush(), fn()), calls)
    g.replay()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        g.replay()
        torch.cuda.synchronize()
    evs = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                 key=lambda e: e.time_range.start)
    dur, gaps, spans, flush_end = defaultdict(list), [], [], None
    for a, b in zip(evs, evs[1:] + [None]):
        dur[a.name[:60]].append(a.time_range.end - a.time_range.start)
        if _is_flush(a):
            if flush_end is not None:
                spans.append(a.time_range.start - flush_end)
            flush_end = a.time_range.end
            if b is not None:
                gaps.append(b.time_range.start - a.time_range.end)
    per_call = [(n, statistics.median(v), len(v)) for n, v in dur.items()]
    median = lambda v: statistics.median(v) if v else None
    return per_call, median(gaps), median(spans)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default="1x128x2048,1x64x2048,1x8x2176,2x128x2048")
    args = ap.parse_args()
    dev = torch.device("cuda")
    flush = L2Flusher(dev)
    spacer = torch.empty(1, device=dev)
    rows = []
    for cell in args.cells.split(","):
        b, h, w = (int(x) for x in cell.split("x"))
        p = make_bench_problem(b, h, w, seed=b * 7 + h + w)
        for physical in (False, True):
            fn = ours_call(p, physical=physical)
            fn()
            ev = time_cold(fn, flush, iters=30)
            gr = time_graph(fn, flush)
            gr2 = time_graph(fn, flush)

            def spaced():
                spacer.add_(1)
                fn()

            gs = time_graph(spaced, flush) - time_graph(lambda: spacer.add_(1), flush)
            per, gap, span = kernel_times(fn, flush)
            tag = f"B={b} H={h} W={w} {'phys' if physical else 'logical'}"
            rows.append((tag, ev, gr, gr2, gs, span, gap))
            print(f"{tag}: events {ev:.1f}  graph {gr:.1f}/{gr2:.1f}  graph+spacer {gs:.1f}  profiled span {span}  flush->next gap {gap}")
            for n, d, k in per:
                print(f"    {d:8.1f} us x{k}  {n}")
    print("\n| cell | events µs | graph µs (twice) | graph, spacer kernel first | profiled flush-to-flush span µs | flush-to-next-kernel gap µs |")
    print("|---|---|---|---|---|---|")
    for tag, ev, gr, gr2, gs, span, gap in rows:
        print(f"| {tag} | {ev:.1f} | {gr:.1f} / {gr2:.1f} | {gs:.1f} | {span} | {gap} |")


if __name__ == "__main__":
    main()
