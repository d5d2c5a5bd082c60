"""Combine split-KV partial results: out = sum_s exp(lse_s - lse) * o_s, lse = logsumexp_s lse_s.

One CTA of 128 threads per (row, head); each thread owns 4 of the 512 latent dims. A split
that saw no selected token has lse_s = -inf and o_s = 0, so it weighs nothing; a row where every
split is empty gets out = 0 and lse = -inf.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32

_LOG2E = math.log2(math.e)
_LN2 = math.log(2.0)


class CombineSplitsKernel:
    def __init__(self, head_dim: int = 512, write_lse: bool = True):
        self.head_dim = head_dim
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
        self.kernel(o_part, lse_part, out, lse).launch(
            grid=[heads, rows, 1], block=[self.num_threads, 1, 1], stream=stream
        )

    @cute.kernel
    def kernel(self, o_part: cute.Tensor, lse_part: cute.Tensor, out: cute.Tensor, lse: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        head, row, _ = cute.arch.block_idx()
        num_splits = o_part.shape[1]
        lse_max = -Float32.inf
        for s in cutlass.range(num_splits):
            lse_max = cute.arch.fmax(lse_max, lse_part[row, s, head])
        acc = cute.make_rmem_tensor(cute.make_layout(self.vec), Float32)
        acc.fill(0.0)
        total = Float32(0.0)
        if lse_max != -Float32.inf:
            for s in cutlass.range(num_splits):
                w = cute.math.exp2((lse_part[row, s, head] - lse_max) * _LOG2E, fastmath=True)
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
