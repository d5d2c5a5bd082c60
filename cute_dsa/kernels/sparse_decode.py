"""Selected-index NoPE MLA decode over a paged FP8 latent cache, heads-as-M tiling (sm_90a).

One CTA per (head tile of 64, split of the selection, query row); 384 threads:

* warpgroup 2, the producer (`LatentGather`): gathers the selected latent rows of a chunk of `N`
  tokens with 16-byte `cp.async` copies into a ring of raw FP8 stages and converts each landed
  stage to FP16 into one of `kv_buffers` (2 or 3) K/V tiles; with 3 the producer converts chunk
  c+2 while the consumers work on chunks c and c+1.
* warpgroups 0 and 1, the consumers. Consumer w owns latent dims [256w, 256w + 256): it computes
  the partial scores Q[:, dims_w] K[:, dims_w]^T (wgmma m64nNk16, both operands K-major in shared
  memory), the two partials are summed through a small shared-memory exchange (x + y == y + x, so
  both warpgroups hold bit-identical S), both run the same fp32 online softmax with exp2, and
  each keeps P in registers as the A operand of O[:, dims_w] += P V[:, dims_w] (register-sourced
  wgmma m64n256k16; V is the same tile seen MN-major). No score is computed twice, P never
  touches shared memory, and each consumer only ever reads its own half of the K/V tile.

Producer and consumers hand the two K/V tiles back and forth with named barriers
(FULL_b: producer arrives, consumers sync; EMPTY_b: the reverse); XCHG_b pairs the consumers
for the score exchange. The latent is read once per (row, head tile), not once per head. Q is
converted from BF16 to FP16 once per CTA; its entries must be inside the FP16 range (|q| < 65504), which absorbed MLA queries are.

Each consumer's half of O leaves through its half of the Q tile (dead after the last QK; `o_stage`),
stored to global memory as whole 512-byte row runs per warp.

Scale folding: s = (q . k) * softmax_scale * k_scale is computed as exp2 of
acc * (softmax_scale * k_scale * log2 e); v_scale multiplies the normalised output.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float32, Int32, Uint8
from cutlass.cute.nvgpu import warpgroup
from cutlass.cute.nvgpu import OperandMajorMode
from cutlass.cute.nvgpu.warpgroup import SmemLayoutAtomKind
from cutlass.memory import SmemAllocator
import cutlass.utils.hopper_helpers as sm90_utils

from ..kernel_config import DecodeVariant
from .decode_common import DecodeKernelBase, resolve_args
from .latent_gather import BAR_EMPTY, BAR_FULL, BAR_Q, BAR_STAGE, BAR_XCHG, DIM, WG, LatentGather
from .latent_load import DirectLatentGather
from .o_stage import STAGE_BYTES, STAGE_COLS, stage_index, stage_shape, stage_unit, staged_row, tile_row

DV_PER_WG = 256  # output dims per consumer warpgroup
assert DV_PER_WG == STAGE_COLS  # o_stage lays out one consumer's output dims


class SparseDecodeKernel(DecodeKernelBase):
    def __init__(self, variant: DecodeVariant):
        cfg = variant.config.validate()
        self.variant = variant
        self.M = cfg.head_tile
        self.heads_per_cta = self.M
        self.N = cfg.chunk_tokens
        self.stages = cfg.stages
        self.overlap = cfg.overlap
        self.q_in_regs = cfg.q_in_regs
        self.drop = variant.drop
        self.kv_bufs = cfg.kv_buffers
        self.id_window = cfg.id_window
        self.flat_cache = variant.flat_cache
        self.ld_global = cfg.gather == "ld_global"
        self.shared_p = cfg.scores == "one"  # set here, used by the SharedPDecodeKernel subclass
        self.pair = cfg.pair  # two head tiles of a cluster share the gather (SharedPDecodeKernel)
        self.regs_consumer, self.regs_producer = self._register_plan()
        self.num_threads = 3 * WG
        # pair: this CTA's producer fills half of each tile (the cluster peer the other half).
        self.gather = (DirectLatentGather if self.ld_global else LatentGather)(
            gather_tokens=cfg.gather_tokens(), tile_tokens=self.N // 2 if cfg.pair else self.N, stages=self.stages, kv_bufs=self.kv_bufs,
            id_window=self.id_window, flat_cache=self.flat_cache, drop=self.drop, q_rows=self.M,
            handoff_threads=3 * WG, signal_q=not self.shared_p, regs=self.regs_producer,
            fused_resolve=cfg.fused_resolve_max_split() if variant.fused_resolve else 0, stages_q=not self.shared_p,
            stream_resolve=variant.stream_resolve, physical_ids=variant.physical_ids, pair=cfg.pair,
            l2_prefetch=variant.prefetches_l2,
        )

    def _register_plan(self):
        """(consumer, producer) registers per thread after setmaxnreg. The pool is what the launch
        allocated (168 per thread x 384 = 64512), and setmaxnreg.inc waits until enough is free:
        asking for more than the pool deadlocks (seen on the H200 with 240/32). Q held as a wgmma
        A operand costs the consumers 64 more, taken from the producer: 2*128*240 + 128*24 =
        64512. The ld_global producer holds its in-flight rows in registers: 2*128*216 + 128*72."""
        plan = (240, 24) if self.q_in_regs else (216, 72) if self.ld_global else (232, 40)
        assert 2 * WG * plan[0] + WG * plan[1] <= 168 * 3 * WG
        return plan

    # ---------------------------------------------------------------- layouts
    def _layouts(self):
        n, m = self.N, self.M
        k_atom = warpgroup.make_smem_layout_atom(SmemLayoutAtomKind.K_SW128, Float16)
        mn_atom = warpgroup.make_smem_layout_atom(SmemLayoutAtomKind.MN_SW128, Float16)
        s_q = cute.tile_to_shape(k_atom, (m, DIM), order=(0, 1))
        # The K tile [N tokens, 512] K-major, and the same bytes as V: [512 dims, N tokens] MN-major.
        s_k = cute.tile_to_shape(k_atom, (n, DIM, self.kv_bufs), order=(0, 1, 2))
        s_v = cute.tile_to_shape(mn_atom, (DIM, n, self.kv_bufs), order=(1, 0, 2))
        s_raw = cute.make_layout((DIM, n, self.stages), stride=(1, DIM, DIM * n))
        # Partial scores, thread-major so each register index is one conflict-free row of 128 words:
        # (thread, accumulator element, consumer, buffer).
        acc = m * n // WG
        s_x = cute.make_layout((WG, acc, 2, 2), stride=(1, WG, WG * acc, 2 * WG * acc))
        return s_q, s_k, s_v, s_raw, s_x

    def _mmas(self):
        mma_qk = sm90_utils.make_trivial_tiled_mma(
            Float16, Float16, OperandMajorMode.K, OperandMajorMode.K, Float32, (1, 1, 1), (self.M, self.N),
            a_source=warpgroup.OperandSource.RMEM if self.q_in_regs else warpgroup.OperandSource.SMEM,
        )
        return mma_qk, self._mma_pv(warpgroup.OperandSource.RMEM)

    def _mma_pv(self, p_source):
        """O[:, 256 dims] += P V[:, 256 dims], P from registers (RMEM) or shared memory (SMEM)."""
        return sm90_utils.make_trivial_tiled_mma(
            Float16, Float16, OperandMajorMode.K, OperandMajorMode.MN, Float32, (1, 1, 1), (self.M, DV_PER_WG),
            a_source=p_source,
        )

    def _kv_tiles(self, smem, s_q_l, s_k_l, s_v_l):
        """The Q tile and the K/V tiles (V: the same bytes seen MN-major) in shared memory."""
        s_q = smem.allocate_tensor(Float16, s_q_l.outer, byte_alignment=1024, swizzle=s_q_l.inner)
        s_k = smem.allocate_tensor(Float16, s_k_l.outer, byte_alignment=1024, swizzle=s_k_l.inner)
        return s_q, s_k, cute.make_tensor(s_k.iterator, s_v_l.outer)

    def _flags_and_ids(self, smem):
        """The K/V tiles' row-valid flags and the two id windows."""
        s_valid = smem.allocate_tensor(Int32, cute.make_layout((self.N, self.kv_bufs)), byte_alignment=16)
        s_ids = smem.allocate_tensor(Int32, cute.make_layout((max(self.id_window, 1), 2)), byte_alignment=16)
        return s_valid, s_ids

    def _resolve_args(self, smem, indices, seq_lens, block_table, block_size, num_blocks):
        """What the producer's own resolve reads: the ids, lengths and block table (fused_resolve),
        and the streamed resolve's shared memory (stream_resolve)."""
        return resolve_args(self.variant, self.id_window, smem, indices, seq_lens, block_table, block_size, num_blocks)

    # ---------------------------------------------------------------- body
    @cute.kernel
    def kernel(
        self,
        q: cute.Tensor,
        cache: cute.Tensor,
        phys: cute.Tensor,
        k_scale,
        v_scale,
        softmax_scale: Float32,
        out: cute.Tensor,
        lse: cute.Tensor,
        split_len: Int32,
        indices: cute.Tensor,
        seq_lens: cute.Tensor,
        block_table: cute.Tensor,
        block_size: Int32,
        num_blocks: Int32,
    ):
        head_tile, split, row, wg_idx, wg_tid, start, end, n_chunks = self._cta(phys, split_len, self.N)

        s_q_l, s_k_l, s_v_l, s_raw_l, s_x_l = self._layouts()
        smem = SmemAllocator()
        s_q, s_k, s_v = self._kv_tiles(smem, s_q_l, s_k_l, s_v_l)
        s_raw, s_vring = self._raw_ring(smem, s_raw_l)
        s_x = smem.allocate_tensor(Float32, s_x_l, byte_alignment=16)
        s_valid, s_ids = self._flags_and_ids(smem)
        res = self._resolve_args(smem, indices, seq_lens, block_table, block_size, num_blocks)

        if wg_idx == 2:
            cute.arch.setmaxregister_decrease(self.regs_producer)
            self.gather.run(q, cache, phys, s_q, s_k, s_raw, s_vring, s_valid, s_ids, head_tile, row, start, end, n_chunks, wg_tid, res)
        else:
            cute.arch.setmaxregister_increase(self.regs_consumer)
            self._consumer(
                q, k_scale, v_scale, softmax_scale, out, lse, s_q, s_k, s_v, s_x, s_valid,
                head_tile, split, row, n_chunks, wg_idx, wg_tid,
            )

    def _raw_ring(self, smem, s_raw_l):
        """The cp.async producer's raw FP8 ring and its valid flags; (None, None) for ld_global."""
        if self.ld_global:
            return None, None
        s_raw = smem.allocate_tensor(Uint8, s_raw_l, byte_alignment=128)
        s_vring = smem.allocate_tensor(Int32, cute.make_layout((self.N, self.stages)), byte_alignment=16)
        return s_raw, s_vring

    # ---------------------------------------------------------------- consumer steps
    @cute.jit
    def _issue_qk(self, q_operand, s_k_mine, acc_s, wg_tid, buf):
        """Partial S = Q[:, dims_w] K[:, dims_w]^T for the chunk in K/V buffer `buf` (committed, not waited).
        `q_operand` is the register fragment of Q (q_in_regs) or its shared-memory tile.
        The tiled MMA is re-made here: its ACCUMULATE state must not escape a branch or loop body."""
        mma_qk = self._mmas()[0]
        thr_qk = mma_qk.get_slice(wg_tid)
        t_sr_q = q_operand
        if cutlass.const_expr(not self.q_in_regs):
            t_sr_q = thr_qk.make_fragment_A(thr_qk.partition_A(q_operand))
        t_sr_k = thr_qk.make_fragment_B(thr_qk.partition_B(s_k_mine[None, None, buf]))
        warpgroup.fence()
        mma_qk.set(warpgroup.Field.ACCUMULATE, False)
        if cutlass.const_expr(self.drop != "mma"):
            for kb in cutlass.range_constexpr(cute.size(t_sr_q.shape[2])):
                cute.gemm(mma_qk, acc_s, t_sr_q[None, None, kb], t_sr_k[None, None, kb], acc_s)
                mma_qk.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.commit_group()

    @cute.jit
    def _issue_pv(self, s_v_mine, acc_o, wg_tid, t_or_p, buf):
        """O[:, dims_w] += P V[:, dims_w] with P in registers (committed, not waited)."""
        mma_pv = self._mmas()[1]
        thr_pv = mma_pv.get_slice(wg_tid)
        t_or_v = thr_pv.make_fragment_B(thr_pv.partition_B(s_v_mine[None, None, buf]))
        warpgroup.fence()
        mma_pv.set(warpgroup.Field.ACCUMULATE, True)
        if cutlass.const_expr(self.drop != "mma"):
            for kb in cutlass.range_constexpr(cute.size(t_or_p.shape[2])):
                cute.gemm(mma_pv, acc_o, t_or_p[None, None, kb], t_or_v[None, None, kb], acc_o)
        warpgroup.commit_group()

    @cute.jit
    def _softmax(self, acc_s, s_x, s_valid, t_cs, row_max, row_sum, scale_o, scale_log2, wg_idx, wg_tid, buf, par):
        """Exchange the partial scores of the chunk in K/V buffer `buf` (exchange slot `par`, the
        chunk's parity; no exchange when one consumer scores: `shared_p`), mask, update the running
        max and sum, leave P (fp32) in `acc_s` and the factor the running O must be scaled by in `scale_o`."""
        if cutlass.const_expr(not self.shared_p):
            for i in cutlass.range_constexpr(cute.size(acc_s)):
                s_x[wg_tid, i, wg_idx, par] = acc_s[i]
            cute.arch.barrier(barrier_id=BAR_XCHG + par, number_of_threads=2 * WG)
        other = 1 - wg_idx
        new_max = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        new_max.store(row_max.load())
        for i in cutlass.range_constexpr(cute.size(acc_s)):
            col = t_cs[i][1]
            v = acc_s[i]
            if cutlass.const_expr(not self.shared_p):
                # Own partial + the other's: the same sum in both consumers (addition commutes).
                v = v + s_x[wg_tid, i, other, par]
            v = v * scale_log2
            if s_valid[col, buf] == 0:
                v = -Float32.inf
            acc_s[i] = v
            rh = (i // 2) % 2
            new_max[rh] = cute.arch.fmax(new_max[rh], v)
        base = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        for rh in cutlass.range_constexpr(2):
            m = new_max[rh]
            m = cute.arch.fmax(m, cute.arch.shuffle_sync_bfly(m, offset=1))
            m = cute.arch.fmax(m, cute.arch.shuffle_sync_bfly(m, offset=2))
            b = m
            if m == -Float32.inf:
                b = Float32(0.0)  # nothing selected yet: keep exp2 finite
            scale_o[rh] = cute.math.exp2(row_max[rh] - b, fastmath=True)
            row_max[rh] = m
            base[rh] = b
            row_sum[rh] = row_sum[rh] * scale_o[rh]
        for i in cutlass.range_constexpr(cute.size(acc_s)):
            rh = (i // 2) % 2
            p = cute.math.exp2(acc_s[i] - base[rh], fastmath=True)
            row_sum[rh] = row_sum[rh] + p
            acc_s[i] = p

    @cute.jit
    def _rescale(self, acc_o, scale_o):
        # Once the running max settles most chunks leave it unchanged: skip the 128 multiplies.
        if scale_o[0] != 1.0 or scale_o[1] != 1.0:
            for i in cutlass.range(cute.size(acc_o), unroll_full=True):
                acc_o[i] = acc_o[i] * scale_o[(i // 2) % 2]

    @cute.jit
    def _store_o(self, out, acc_o, t_co, inv, head_tile, split, row, num_heads, half, s_q, wg_tid):
        """A consumer's half of O (dims [256 half, +256)), normalised by its rows' factors `inv`,
        staged through its half of the Q tile (`o_stage`: dead once the last QK that reads it has
        completed, i.e. after the caller's last wgmma wait; for the shared-P second consumer,
        after BAR_FIN) and stored as whole 512-byte row runs with 16-byte stores. Straight from
        the accumulator every store was a scalar touching 8 rows per warp instruction."""
        dtype = Float32 if cutlass.const_expr(self.variant.split) else out.element_type
        nbytes = dtype.width // 8
        vec, units, rows, passes = stage_shape(nbytes, self.M)
        base = cute.recast_ptr(s_q.iterator, None, dtype=dtype) + half * (STAGE_BYTES // nbytes)
        stage = cute.make_tensor(base, cute.make_layout(rows * DV_PER_WG))
        pair = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        bar = BAR_STAGE + half
        cute.arch.fence_proxy("async.shared", space="cta")  # the stage was last read by wgmma
        for ps in cutlass.range_constexpr(passes):
            if cutlass.const_expr(ps > 0):
                cute.arch.barrier(barrier_id=bar, number_of_threads=WG)  # the last pass's rows are read
            for i in cutlass.range_constexpr(0, cute.size(acc_o), 2):
                rh = (i // 2) % 2  # elements i, i+1: one row, adjacent columns
                if cutlass.const_expr(passes == 1 or rh == ps):
                    idx = stage_index(staged_row(t_co[i][0], passes), t_co[i][1], vec)
                    pair[0] = acc_o[i] * inv[rh]
                    pair[1] = acc_o[i + 1] * inv[rh]
                    cute.local_tile(stage, (2,), (idx // 2,)).store(pair.load().to(dtype))
            cute.arch.barrier(barrier_id=bar, number_of_threads=WG)
            u = wg_tid % units
            step = WG // units
            for k in cutlass.range_constexpr(rows // step):
                sr = wg_tid // units + step * k
                head = head_tile * self.M + tile_row(sr, ps, passes)
                if head < num_heads:
                    src = cute.local_tile(stage, (vec,), (stage_unit(sr, u, units),))
                    dst = self._out_row(out, row, split, head)
                    cute.local_tile(dst, (vec,), (half * units + u,)).store(src.load())

    # ---------------------------------------------------------------- consumers
    @cute.jit
    def _consumer(
        self, q, k_scale, v_scale, softmax_scale, out, lse, s_q, s_k, s_v, s_x, s_valid,
        head_tile, split, row, n_chunks, wg_idx, wg_tid,
    ):
        num_heads = q.shape[1]
        scale_log2, vs = self._scales(k_scale, v_scale, softmax_scale)

        mma_qk, mma_pv = self._mmas()
        thr_qk = mma_qk.get_slice(wg_tid)
        thr_pv = mma_pv.get_slice(wg_tid)
        # This consumer's half of the latent dims, for Q, K and V alike.
        s_q_mine = cute.local_tile(s_q, (self.M, DV_PER_WG), (0, wg_idx))
        s_k_mine = cute.local_tile(s_k, (self.N, DV_PER_WG, self.kv_bufs), (0, wg_idx, 0))
        s_v_mine = cute.local_tile(s_v, (DV_PER_WG, self.N, self.kv_bufs), (wg_idx, 0, 0))
        # P as the register A operand of the PV wgmma. Its ((2,2,2), 1, N/16) fragment holds the
        # same elements in the same register order as the ((2,2,N/8), 1, 1) score accumulator.
        t_or_p = thr_pv.make_fragment_A(thr_pv.partition_shape_A((self.M, self.N)))

        acc_s = cute.make_rmem_tensor(thr_qk.partition_shape_C((self.M, self.N)), Float32)
        acc_o = cute.make_rmem_tensor(thr_pv.partition_shape_C((self.M, DV_PER_WG)), Float32)
        acc_o.fill(0.0)
        c_s = cute.make_identity_tensor((self.M, self.N))
        t_cs = thr_qk.partition_C(c_s)
        c_o = cute.make_identity_tensor((self.M, DV_PER_WG))
        t_co = thr_pv.partition_C(c_o)
        # Each thread holds two rows of the 64-row tile (row and row + 8 of its warp's 16).
        row_max = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        row_sum = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        row_max.fill(-Float32.inf)
        row_sum.fill(0.0)

        scale_o = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        q_operand = s_q_mine
        if cutlass.const_expr(self.q_in_regs):
            # Q[:, dims_w] as the register A operand of every QK wgmma: read from shared memory once
            # instead of once per chunk (the largest shared-memory stream otherwise).
            q_operand = thr_qk.make_fragment_A(thr_qk.partition_shape_A((self.M, DV_PER_WG)))
            cute.arch.barrier(barrier_id=BAR_Q, number_of_threads=3 * WG)
            q_operand.store(thr_qk.partition_A(s_q_mine).load())
        qk = (q_operand, s_k_mine, acc_s, wg_tid)
        sm = (acc_s, s_x, s_valid, t_cs, row_max, row_sum, scale_o, scale_log2, wg_idx, wg_tid)
        pv = (s_v_mine, acc_o, wg_tid)
        if cutlass.const_expr(self.overlap):
            # Intra-warpgroup overlap: QK(c+1) is issued ahead of PV(c), so the score exchange and
            # softmax of chunk c+1 run while the tensor cores still work on PV(c).
            if n_chunks > 0:
                cute.arch.barrier(barrier_id=BAR_FULL, number_of_threads=3 * WG)
                self._issue_qk(*qk, Int32(0))
                warpgroup.wait_group(0)
                self._softmax(*sm, Int32(0), Int32(0))
                t_or_p.store(acc_s.load().to(Float16))
            # Every iteration has a next chunk (the last PV is peeled off below), so the wgmma
            # wait counts are the same on every path and ptxas need not serialize.
            for c in cutlass.range(n_chunks - 1, unroll=1):
                buf = c % self.kv_bufs
                nxt = (c + 1) % self.kv_bufs
                cute.arch.barrier(barrier_id=BAR_FULL + nxt, number_of_threads=3 * WG)
                self._issue_qk(*qk, nxt)
                self._issue_pv(*pv, t_or_p, buf)
                warpgroup.wait_group(1)  # QK(c+1) done; PV(c) may still run
                self._softmax(*sm, nxt, (c + 1) % 2)
                warpgroup.wait_group(0)
                if c + self.kv_bufs < n_chunks:
                    cute.arch.barrier_arrive(barrier_id=BAR_EMPTY + buf, number_of_threads=3 * WG)
                # P(c+1) goes into the A registers only now: PV(c) read them until the wait.
                t_or_p.store(acc_s.load().to(Float16))
                self._rescale(acc_o, scale_o)
            if n_chunks > 0:
                self._issue_pv(*pv, t_or_p, (n_chunks - 1) % self.kv_bufs)
                warpgroup.wait_group(0)
        else:
            for c in cutlass.range(n_chunks, unroll=1):
                buf = c % self.kv_bufs
                cute.arch.barrier(barrier_id=BAR_FULL + buf, number_of_threads=3 * WG)
                self._issue_qk(*qk, buf)
                warpgroup.wait_group(0)
                self._softmax(*sm, buf, c % 2)
                t_or_p.store(acc_s.load().to(Float16))
                self._rescale(acc_o, scale_o)
                self._issue_pv(*pv, t_or_p, buf)
                warpgroup.wait_group(0)
                if c + self.kv_bufs < n_chunks:
                    cute.arch.barrier_arrive(barrier_id=BAR_EMPTY + buf, number_of_threads=3 * WG)

        # Epilogue: normalise, apply v_scale, write O (and LSE).
        inv = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        lse_val = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        for rh in cutlass.range_constexpr(2):
            s = row_sum[rh]
            s = s + cute.arch.shuffle_sync_bfly(s, offset=1)
            s = s + cute.arch.shuffle_sync_bfly(s, offset=2)
            inv[rh], lse_val[rh] = self._normaliser(s, row_max[rh], vs)
        if cutlass.const_expr(not self.q_in_regs):
            # O is staged in the Q tile, which the producer writes: with no chunk (an empty split)
            # no FULL hand-over has ordered those writes before ours.
            cute.arch.barrier(barrier_id=BAR_Q, number_of_threads=3 * WG)
        self._store_o(out, acc_o, t_co, inv, head_tile, split, row, num_heads, wg_idx, s_q, wg_tid)
        if cutlass.const_expr(self.variant.write_lse or self.variant.split):
            if wg_idx == 0:
                if wg_tid % 4 == 0:
                    for rh in cutlass.range_constexpr(2):
                        head = head_tile * self.M + t_cs[2 * rh][0]
                        if head < num_heads:
                            self._store_lse(lse, row, split, head, lse_val[rh])
