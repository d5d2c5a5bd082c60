"""GPU timing: L2 flush, CUDA-event medians, CUDA-graph replay, and the two ceilings of the chip.

Used by `cute-dsa bench` and `cute-dsa tune`. Every figure is a median over many calls, with the
L2 flushed before each call so that a selection small enough to stay in the 60 MB L2 is still
read from HBM, as it would be in a model step.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

L2_FLUSH_BYTES = 256 << 20  # > 4x the H200's 60 MB L2


class L2Flusher:
    def __init__(self, device: torch.device):
        self.buf = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buf.fill_(1)  # a write pass evicts every line the kernel could reuse


def time_cold(fn: Callable[[], object], flush: L2Flusher, iters: int = 30, warmup: int = 3) -> float:
    """Median µs of `fn` with the L2 flushed before every call (events around `fn` only)."""
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        flush()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def capture_graph(body: Callable[[], object], calls: int) -> torch.cuda.CUDAGraph:
    """A CUDA graph of `calls` x body(), captured on a side stream after one eager body() there
    (compiles and warms outside the capture)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        body()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            for _ in range(calls):
                body()
    torch.cuda.current_stream().wait_stream(stream)
    return g


def time_graph(fn: Callable[[], object], flush: L2Flusher, calls: int = 10, replays: int = 15) -> float:
    """Median µs per call of a CUDA graph holding `calls` x (flush, fn), minus the same graph of
    flushes alone: the launch gaps of the Python path disappear, the L2 stays cold."""
    both = capture_graph(lambda: (flush(), fn()), calls)
    flushes = capture_graph(flush, calls)

    def replay_us(g: torch.cuda.CUDAGraph) -> float:
        g.replay()
        res = []
        for _ in range(replays):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            e.synchronize()
            res.append(s.elapsed_time(e) * 1e3)
        return statistics.median(res)

    return max(0.0, (replay_us(both) - replay_us(flushes)) / calls)


def time_host(fn: Callable[[], object], calls: int = 50) -> float:
    """Median host µs to enqueue one call of `fn` (the eager launch overhead; no sync inside)."""
    fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        res.append((time.perf_counter() - t) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(res)


@dataclass(frozen=True)
class Ceilings:
    copy_tbps: float  # device-to-device copy, bytes read + written
    bf16_tflops: float  # dense bf16 matmul on random data


def measure_ceilings(device: torch.device) -> Ceilings:
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    flush = L2Flusher(device)
    us = time_cold(lambda: dst.copy_(src), flush, iters=10)
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=device)
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device=device)
    mm_us = time_cold(lambda: a @ b, flush, iters=10)
    return Ceilings(copy_tbps=2 * n / us / 1e6, bf16_tflops=2 * 8192**3 / mm_us / 1e6)
