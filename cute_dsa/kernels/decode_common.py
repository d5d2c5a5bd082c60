"""Pieces both decode tilings share: the launch, the CTA's slice of the selection, the scales, the
softmax normaliser and the output/LSE stores (direct output or split-KV partials)."""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32

from .latent_gather import WG
from .stream_resolve import stream_words

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


def resolve_args(variant, id_window, smem, indices, seq_lens, block_table, block_size, num_blocks):
    """`res`, what a producer resolving its own ids reads: the ids, lengths and block table, and
    with stream_resolve its shared memory (allocated here, after everything else)."""
    if variant.stream_resolve:
        s_stream = smem.allocate_tensor(Int32, cute.make_layout(stream_words(id_window)), byte_alignment=16)
        return (indices, seq_lens, block_table, block_size, num_blocks, s_stream)
    return (indices, seq_lens, block_table, block_size, num_blocks)


class DecodeKernelBase:
    """A decode kernel: `variant`, `heads_per_cta`, `num_threads` set by the subclass, which
    defines the `kernel` body. One CTA per (head tile, split of the selection, query row)."""

    @cute.jit
    def __call__(
        self,
        q: cute.Tensor,  # (rows, heads, 512) bf16
        cache: cute.Tensor,  # (blocks, block_size, token_bytes) uint8, or (rows, token_bytes) when flat_cache
        phys: cute.Tensor,  # (rows, width) int32: physical row or -1 (from ResolveIndicesKernel, or written here: fused_resolve)
        indices: cute.Tensor,  # (rows, width) int32 logical ids (read only with fused_resolve)
        seq_lens: cute.Tensor,  # (rows,) int32
        block_table: cute.Tensor,  # (rows, max_blocks) int32
        k_scale,  # Float32, or a (1,) fp32 tensor when variant.k_scale_on_device
        v_scale,
        softmax_scale: Float32,
        out: cute.Tensor,  # (rows, heads, 512) bf16, or (rows, splits, heads, 512) fp32 partials
        lse: cute.Tensor,  # (rows, heads) fp32, or (rows, splits, heads) fp32 partials
        split_len: Int32,  # selection positions per split (a multiple of the chunk)
        num_splits: Int32,
        block_size: Int32,
        num_blocks: Int32,
        stream,
    ):
        head_tiles = (q.shape[1] + self.heads_per_cta - 1) // self.heads_per_cta
        cluster = [1, 1, 1]
        if cutlass.const_expr(self.variant.config.pair):
            head_tiles = (head_tiles + 1) // 2 * 2  # whole clusters of two head tiles (the spare one stores nothing)
            cluster = [2, 1, 1]
        self.kernel(
            q, cache, phys, k_scale, v_scale, softmax_scale, out, lse, split_len, indices, seq_lens, block_table, block_size, num_blocks
        ).launch(
            grid=[head_tiles, num_splits, q.shape[0]],
            block=[self.num_threads, 1, 1],
            cluster=cluster,
            stream=stream,
            # One CTA per SM: ptxas then gives every thread the 168 registers the setmaxnreg
            # split assumes (without it the count is ptxas's choice, and a smaller pool deadlocks).
            min_blocks_per_mp=1,
            # Programmatic dependent launch: the CTAs start (and stage Q) while the resolve kernel
            # drains; the producer waits for it (griddepcontrol.wait) before its first row id.
            # A decode that resolves its own ids, or takes physical ids, is the first launch: it
            # waits for the previous kernel (which may have written q and the ids) like any launch.
            use_pdl=not (self.variant.fused_resolve or self.variant.stream_resolve or self.variant.physical_ids),
        )

    @cute.jit
    def _cta(self, phys, split_len, chunk_tokens: cutlass.Constexpr):
        """The kernel prologue both tilings share: (head tile, split, row, warpgroup, thread in the
        warpgroup, start, end, n_chunks). It also lets the dependent launch (the split-KV combine,
        which waits for this grid to finish) start."""
        tidx, _, _ = cute.arch.thread_idx()
        head_tile, split, row = cute.arch.block_idx()
        wg_idx = cute.arch.make_warp_uniform(tidx // WG)
        wg_tid = tidx % WG
        cute.arch.griddepcontrol_launch_dependents()
        start, end, n_chunks = self._chunks(phys, split, split_len, chunk_tokens)
        return head_tile, split, row, wg_idx, wg_tid, start, end, n_chunks

    @cute.jit
    def _chunks(self, phys, split, split_len, chunk_tokens: cutlass.Constexpr):
        """This CTA's selection positions [start, end) and their number of chunks."""
        width = phys.shape[1]
        start = split * split_len
        end = cutlass.min(start + split_len, width)
        n_chunks = Int32(0)
        if end > start:
            n_chunks = (end - start + chunk_tokens - 1) // chunk_tokens
        return start, end, n_chunks

    @cute.jit
    def _scales(self, k_scale, v_scale, softmax_scale):
        """(exp2 factor of the raw scores, v_scale): the scales as launch values or device tensors."""
        ks = Float32(0.0)
        vs = Float32(0.0)
        if cutlass.const_expr(self.variant.k_scale_on_device):
            ks = k_scale[0]
        else:
            ks = Float32(k_scale)
        if cutlass.const_expr(self.variant.v_scale_on_device):
            vs = v_scale[0]
        else:
            vs = Float32(v_scale)
        return softmax_scale * ks * LOG2E, vs

    @cute.jit
    def _normaliser(self, s, m, vs):
        """(output factor, natural-log LSE) of a row with exp2-domain max m and sum s; an empty
        row (s == 0) gives factor 0 and LSE -inf."""
        inv = Float32(0.0)
        lse_val = -Float32.inf
        if s > 0.0:
            inv = vs / s
            lse_val = (m + cute.math.log2(s, fastmath=True)) * LN2
        return inv, lse_val

    @cute.jit
    def _store_out(self, out, row, split, head, dim, val):
        if cutlass.const_expr(self.variant.split):
            out[row, split, head, dim] = val
        else:
            out[row, head, dim] = val.to(out.element_type)

    @cute.jit
    def _out_row(self, out, row, split, head):
        """The 512 output dims of (row, split, head): FP32 partials (split) or the direct output."""
        if cutlass.const_expr(self.variant.split):
            return out[row, split, head, None]
        return out[row, head, None]

    @cute.jit
    def _store_lse(self, lse, row, split, head, val):
        if cutlass.const_expr(self.variant.split):
            lse[row, split, head] = val
        else:
            lse[row, head] = val
