"""Combine split-KV partial results: out = sum_s exp(lse_s - lse) * o_s, lse = logsumexp_s lse_s.

One CTA of 128 threads per (row, head); each thread owns 4 of the 512 latent dims and loads
one split's LSE (so at most 128 splits), the weights go through shared memory; the first
splits' rows (all of them, up to 32 splits) are already in flight while the weights are computed. A split
that saw no selected token has lse_s = -inf and o_s = 0, so it weighs nothing; a row where every
split is empty gets out = 0 and lse = -inf.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.memory import SmemAllocator

_LOG2E = math.log2(math.e)
_LN2 = math.log(2.0)
PREFETCH_DEPTHS = (2, 4, 8, 16, 32)  # compiled depths; the launch takes the least >= its splits


def prefetch_depth(splits: int) -> int:
    """Partial rows a thread loads before the weights are known: all of them up to 32 splits
    (4 fp32 registers each; deeper would cut the CTAs per SM of large-batch combines)."""
    return next((d for d in PREFETCH_DEPTHS if d >= splits), PREFETCH_DEPTHS[-1])


class CombineSplitsKernel:
    def __init__(self, head_dim: int = 512, write_lse: bool = True, prefetch: int = 16):
        self.head_dim = head_dim
        self.prefetch = prefetch  # partial rows per thread loaded before the LSE reduction
        self.vec = 4
        self.num_threads = head_dim // self.vec
        self.write_lse = write_lse

    @cute.jit
    def __call__(
        self,
        o_part: cute.Tensor,  # (rows, splits, heads, 512) fp32
        lse_part: cute.Tensor,  # (rows, splits, heads) fp32, natural log
        out: cute.Tensor,  # (rows, heads, 512) bf16
        lse: cute.Tensor,  # (rows, heads) fp32
        stream,
    ):
        rows, heads = out.shape[0], out.shape[1]
        # Programmatic dependent launch: the CTAs start while the decode drains and wait for it
        # (griddepcontrol.wait) before their first load.
        self.kernel(o_part, lse_part, out, lse).launch(
            grid=[heads, rows, 1], block=[self.num_threads, 1, 1], stream=stream, use_pdl=True
        )

    @cute.kernel
    def kernel(self, o_part: cute.Tensor, lse_part: cute.Tensor, out: cute.Tensor, lse: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        head, row, _ = cute.arch.block_idx()
        num_splits = o_part.shape[1]  # <= num_threads (DecodeKernelConfig.max_splits)
        smem = SmemAllocator()
        cute.arch.griddepcontrol_wait()  # the decode's partials are complete and visible
        # The first `prefetch` splits' partial rows: loaded before the LSE reduction, so their
        # latency overlaps it instead of following it (the rows do not depend on the weights).
        pre = cute.make_rmem_tensor(cute.make_layout((self.vec, self.prefetch)), Float32)
        for s in cutlass.range_constexpr(self.prefetch):
            if s < num_splits:
                pre[None, s].store(cute.local_tile(o_part[row, s, head, None], (self.vec,), (tidx,)).load())
        s_w = smem.allocate_tensor(Float32, cute.make_layout(self.num_threads), byte_alignment=16)
        s_max = smem.allocate_tensor(Float32, cute.make_layout(self.num_threads // 32), byte_alignment=16)
        # One split's LSE per thread: all loads in flight at once, not one per loop trip.
        mine = -Float32.inf
        if tidx < num_splits:
            mine = lse_part[row, tidx, head]
        m = mine
        for off in cutlass.range_constexpr(5):
            m = cute.arch.fmax(m, cute.arch.shuffle_sync_bfly(m, offset=1 << off))
        if tidx % 32 == 0:
            s_max[tidx // 32] = m
        cute.arch.sync_threads()
        lse_max = s_max[0]
        for w in cutlass.range_constexpr(1, self.num_threads // 32):
            lse_max = cute.arch.fmax(lse_max, s_max[w])
        weight = Float32(0.0)
        if lse_max != -Float32.inf:
            weight = cute.math.exp2((mine - lse_max) * _LOG2E, fastmath=True)  # 0 for an empty split
        s_w[tidx] = weight
        cute.arch.sync_threads()
        acc = cute.make_rmem_tensor(cute.make_layout(self.vec), Float32)
        acc.fill(0.0)
        total = Float32(0.0)
        if lse_max != -Float32.inf:
            for s in cutlass.range_constexpr(self.prefetch):
                if s < num_splits:
                    w = s_w[s]
                    total = total + w
                    acc.store(acc.load() + pre[None, s].load() * w)
            # Unrolled so that several splits' partial rows are loaded back to back.
            for s in cutlass.range(self.prefetch, num_splits, unroll=4):
                w = s_w[s]
                total = total + w
                src = cute.local_tile(o_part[row, s, head, None], (self.vec,), (tidx,))
                acc.store(acc.load() + src.load() * w)
        inv = Float32(0.0)
        if total > 0.0:
            inv = 1.0 / total
        dst = cute.local_tile(out[row, head, None], (self.vec,), (tidx,))
        dst.store((acc.load() * inv).to(out.element_type))
        if cutlass.const_expr(self.write_lse):
            if tidx == 0:
                res = -Float32.inf
                if total > 0.0:
                    res = lse_max + cute.math.log2(total, fastmath=True) * _LN2
                lse[row, head] = res
