"""Heads-as-M decode with one scoring consumer (scores="one"), FlashMLA's split of the work (sm_90a).

Same CTA, producer and K/V tiles as `SparseDecodeKernel`; the consumers divide the work differently:

* warpgroup 0 computes the whole score tile S = Q K^T over all 512 dims (no partial scores to
  exchange), runs the online softmax, writes P (FP16) and the per-head rescale factors into one of
  two shared-memory P buffers, then does O[:, 0:256] += P V[:, 0:256] with P from registers;
* warpgroup 1 waits for that P buffer and does O[:, 256:512] += P V[:, 256:512] with both operands
  in shared memory; its O rows are warpgroup 0's (the same accumulator layout), so the factors are
  read by row.

What this buys: no fp32 score exchange (its buffer was 4 x the P tile), so 64-token K/V tiles fit
next to the Q tile (with gather="ld_global"), and warpgroup 1's PV of chunk c runs on the tensor
cores while warpgroup 0 scores chunk c+1. P_FULL/P_EMPTY (two buffers) pace the consumers; the
K/V tiles are handed over with FULL/EMPTY exactly as in the other kernel. The consumers stage Q
themselves (BAR_Q), each thread's loads in flight at once, while the producer starts on the row
ids and rows: the producer's first rows no longer wait behind 64 KB of Q.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float32, Int32, Int64
from cutlass._mlir.dialects import nvvm
from cutlass.cute.nvgpu import warpgroup
from cutlass.cute.nvgpu.warpgroup import SmemLayoutAtomKind
from cutlass.memory import SmemAllocator

from .latent_gather import BAR_EMPTY, BAR_FIN, BAR_FULL, BAR_P_EMPTY, BAR_P_FULL, BAR_Q, WG
from .sparse_decode import DV_PER_WG, SparseDecodeKernel

# K-major P tile atoms by the tile's width in tokens (its rows are N FP16 values).
P_ATOMS = {16: SmemLayoutAtomKind.K_SW32, 32: SmemLayoutAtomKind.K_SW64, 48: SmemLayoutAtomKind.K_SW32, 64: SmemLayoutAtomKind.K_SW128}


class SharedPDecodeKernel(SparseDecodeKernel):
    def __init__(self, variant):
        super().__init__(variant)
        assert self.shared_p and not self.q_in_regs

    def _register_plan(self):
        """Warpgroup 0 holds S, P and half of O; warpgroup 1 only half of O; the ld_global producer
        holds its register sets of rows: 4 in 120 registers (a fifth spills there), 128 * (224 + 160
        + 120) = 64512, the launch's pool. A fifth and sixth set (16 registers each) come from the
        scorer: 208 and 192 still hold S, P and O without spilling (ptxas -v, sm_90a; with the
        overlap's second score tile only 208)."""
        extra = 16 * max(0, self.stages - 4)
        producer = 120 + extra
        self.regs_scorer, self.regs_second = 224 - extra, 160
        self.q_batch = 16  # Q loads per consumer thread in flight together (64 of its registers)
        assert WG * (self.regs_scorer + self.regs_second + producer) <= 168 * 3 * WG
        return self.regs_scorer, producer

    def _p_layout(self):
        atom = warpgroup.make_smem_layout_atom(P_ATOMS[self.N], Float16)
        return cute.tile_to_shape(atom, (self.M, self.N, 2), order=(0, 1, 2))

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

        s_q_l, s_k_l, s_v_l, s_raw_l, _ = self._layouts()
        s_p_l = self._p_layout()
        smem = SmemAllocator()
        s_q, s_k, s_v = self._kv_tiles(smem, s_q_l, s_k_l, s_v_l)
        s_p = smem.allocate_tensor(Float16, s_p_l.outer, byte_alignment=1024, swizzle=s_p_l.inner)
        s_raw, s_vring = self._raw_ring(smem, s_raw_l)
        s_scale = smem.allocate_tensor(Float32, cute.make_layout((self.M, 2)), byte_alignment=16)
        s_fin = smem.allocate_tensor(Float32, cute.make_layout(self.M), byte_alignment=16)
        s_valid, s_ids = self._flags_and_ids(smem)
        res = self._resolve_args(smem, indices, seq_lens, block_table, block_size, num_blocks)
        bars = self._pair_barriers(smem, wg_idx, wg_tid)

        if wg_idx == 2:
            cute.arch.setmaxregister_decrease(self.regs_producer)
            self.gather.run(q, cache, phys, s_q, s_k, s_raw, s_vring, s_valid, s_ids, head_tile, row, start, end, n_chunks, wg_tid, res,
                            bars)
        elif wg_idx == 0:
            cute.arch.setmaxregister_increase(self.regs_scorer)
            # The consumers stage Q (both warpgroups, all loads of a thread in flight at once)
            # while the producer starts on the row ids; read by wgmma: the async proxy.
            self.gather.stage_q(q, s_q, head_tile, row, wg_tid, 2 * WG, self.q_batch)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier(barrier_id=BAR_Q, number_of_threads=2 * WG)
            self._scorer(q, k_scale, v_scale, softmax_scale, out, lse, s_q, s_k, s_v, s_p, s_scale, s_fin, s_valid,
                         head_tile, split, row, n_chunks, wg_tid, bars)
        else:
            cute.arch.setmaxregister_decrease(self.regs_second)
            self.gather.stage_q(q, s_q, head_tile, row, WG + wg_tid, 2 * WG, self.q_batch)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier_arrive(barrier_id=BAR_Q, number_of_threads=2 * WG)
            self._second(q, out, s_q, s_v, s_p, s_scale, s_fin, head_tile, split, row, n_chunks, wg_tid, bars)
        if cutlass.const_expr(self.pair):
            # Neither CTA leaves while the other may still store into its tiles or arrive on its barriers.
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()

    # ---------------------------------------------------------------- pair (two head tiles, one gather)
    @cute.jit
    def _pair_barriers(self, smem, wg_idx, wg_tid):
        """With `pair`: PEER_FULL[b] (this producer's expect_tx arrival + the bytes the peer's
        producer stores into tile b) and PEER_EMPTY[b] (the peer's 8 consumer warps are done with
        their tile b), initialised before either CTA of the cluster touches the other. None otherwise."""
        bars = None
        if cutlass.const_expr(self.pair):
            bars = smem.allocate_array(Int64, 2 * self.kv_bufs, byte_alignment=8)
            if wg_idx == 0 and wg_tid == 0:
                for b in cutlass.range_constexpr(self.kv_bufs):
                    cute.arch.mbarrier_init(bars + b, 1)
                    cute.arch.mbarrier_init(bars + self.kv_bufs + b, 2 * WG // 32)
            cute.arch.mbarrier_init_fence()
            cute.arch.cluster_arrive_relaxed()
            cute.arch.cluster_wait()
        return bars

    @cute.jit
    def _tile_full(self, buf, c, bars):
        """Wait until K/V tile `buf` holds chunk c: this CTA's producer arrived (FULL) and, with
        `pair`, the peer's half landed (PEER_FULL, phase c // kv_bufs)."""
        cute.arch.barrier(barrier_id=BAR_FULL + buf, number_of_threads=3 * WG)
        if cutlass.const_expr(self.pair):
            cute.arch.mbarrier_wait(bars + buf, (c // self.kv_bufs) % 2)

    @cute.jit
    def _tile_free(self, buf, bars):
        """This warpgroup is done with K/V tile `buf`: tell this CTA's producer (EMPTY) and, with
        `pair`, the peer's producer, which stores its half into this tile (one arrival per warp)."""
        cute.arch.barrier_arrive(barrier_id=BAR_EMPTY + buf, number_of_threads=3 * WG)
        if cutlass.const_expr(self.pair):
            cute.arch.sync_warp()
            if cute.arch.lane_idx() == 0:
                cute.arch.mbarrier_arrive(bars + self.kv_bufs + buf, 1 - cute.arch.block_in_cluster_idx()[0],
                                          scope=nvvm.MemScopeKind.CLUSTER)

    # ---------------------------------------------------------------- warpgroup 0
    @cute.jit
    def _scorer(self, q, k_scale, v_scale, softmax_scale, out, lse, s_q, s_k, s_v, s_p, s_scale, s_fin, s_valid,
                head_tile, split, row, n_chunks, wg_tid, bars):
        num_heads = q.shape[1]
        scale_log2, vs = self._scales(k_scale, v_scale, softmax_scale)
        mma_qk, mma_pv = self._mmas()
        thr_qk = mma_qk.get_slice(wg_tid)
        thr_pv = mma_pv.get_slice(wg_tid)
        s_v_lo = cute.local_tile(s_v, (DV_PER_WG, self.N, self.kv_bufs), (0, 0, 0))
        t_or_p = thr_pv.make_fragment_A(thr_pv.partition_shape_A((self.M, self.N)))
        acc_s = cute.make_rmem_tensor(thr_qk.partition_shape_C((self.M, self.N)), Float32)
        acc_o = cute.make_rmem_tensor(thr_pv.partition_shape_C((self.M, DV_PER_WG)), Float32)
        acc_o.fill(0.0)
        t_cs = thr_qk.partition_C(cute.make_identity_tensor((self.M, self.N)))
        t_co = thr_pv.partition_C(cute.make_identity_tensor((self.M, DV_PER_WG)))
        row_max = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        row_sum = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        row_max.fill(-Float32.inf)
        row_sum.fill(0.0)
        scale_o = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        sm = (acc_s, None, s_valid, t_cs, row_max, row_sum, scale_o, scale_log2, Int32(0), wg_tid)
        share = (thr_pv, t_or_p, s_p, s_scale, t_cs, scale_o, wg_tid)
        if cutlass.const_expr(self.overlap):
            # QK(c+1) is issued ahead of PV_lo(c): the softmax of chunk c+1 runs while the tensor
            # cores still work on both halves of PV(c).
            if n_chunks > 0:
                self._tile_full(Int32(0), Int32(0), bars)
                self._issue_qk(s_q, s_k, acc_s, wg_tid, Int32(0))
                warpgroup.wait_group(0)
                self._softmax(*sm, Int32(0), Int32(0))
                t_or_p.store(acc_s.load().to(Float16))
                self._share_p(*share, Int32(0), Int32(0))
            # Every iteration has a next chunk (the last PV is peeled off below): the same wgmma
            # wait counts on every path, so ptxas need not serialize.
            for c in cutlass.range(n_chunks - 1, unroll=1):
                buf = c % self.kv_bufs
                nxt = (c + 1) % self.kv_bufs
                self._tile_full(nxt, c + 1, bars)
                self._issue_qk(s_q, s_k, acc_s, wg_tid, nxt)
                self._issue_pv(s_v_lo, acc_o, wg_tid, t_or_p, buf)
                warpgroup.wait_group(1)  # QK(c+1) done; PV_lo(c) may still run
                self._softmax(*sm, nxt, (c + 1) % 2)
                warpgroup.wait_group(0)
                if c + self.kv_bufs < n_chunks:
                    self._tile_free(buf, bars)
                # P(c+1) goes into the A registers only now: PV_lo(c) read them until the wait. It is
                # shared from them too: converted twice, ptxas would fold the two conversions and
                # see the fragment redefined under the running PV (and serialize the wgmma).
                t_or_p.store(acc_s.load().to(Float16))
                self._share_p(*share, c + 1, (c + 1) % 2)
                self._rescale(acc_o, scale_o)
            if n_chunks > 0:
                self._issue_pv(s_v_lo, acc_o, wg_tid, t_or_p, (n_chunks - 1) % self.kv_bufs)
                warpgroup.wait_group(0)
        else:
            for c in cutlass.range(n_chunks, unroll=1):
                buf = c % self.kv_bufs
                pb = c % 2
                self._tile_full(buf, c, bars)
                self._issue_qk(s_q, s_k, acc_s, wg_tid, buf)
                warpgroup.wait_group(0)
                self._softmax(*sm, buf, pb)
                t_or_p.store(acc_s.load().to(Float16))
                self._share_p(*share, c, pb)
                self._rescale(acc_o, scale_o)
                self._issue_pv(s_v_lo, acc_o, wg_tid, t_or_p, buf)
                warpgroup.wait_group(0)
                if c + self.kv_bufs < n_chunks:
                    self._tile_free(buf, bars)

        # Epilogue: the rows' output factors (for both halves) and LSE, then this half of O.
        inv = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        lse_val = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        for rh in cutlass.range_constexpr(2):
            s = row_sum[rh]
            s = s + cute.arch.shuffle_sync_bfly(s, offset=1)
            s = s + cute.arch.shuffle_sync_bfly(s, offset=2)
            inv[rh], lse_val[rh] = self._normaliser(s, row_max[rh], vs)
            if wg_tid % 4 == 0:
                s_fin[t_cs[2 * rh][0]] = inv[rh]
        cute.arch.barrier_arrive(barrier_id=BAR_FIN, number_of_threads=2 * WG)
        self._store_o(out, acc_o, t_co, inv, head_tile, split, row, num_heads, 0, s_q, wg_tid)
        if cutlass.const_expr(self.variant.write_lse or self.variant.split):
            if wg_tid % 4 == 0:
                for rh in cutlass.range_constexpr(2):
                    head = head_tile * self.M + t_cs[2 * rh][0]
                    if head < num_heads:
                        self._store_lse(lse, row, split, head, lse_val[rh])

    @cute.jit
    def _share_p(self, thr_pv, t_or_p, s_p, s_scale, t_cs, scale_o, wg_tid, c, pb):
        """P of chunk c (the PV A fragment `t_or_p`) and its rescale factors into P buffer pb for
        warpgroup 1, once that warpgroup is done with chunk c-2's."""
        if c >= 2:
            cute.arch.barrier(barrier_id=BAR_P_EMPTY + pb, number_of_threads=2 * WG)
        thr_pv.partition_A(s_p[None, None, pb]).store(t_or_p.load())
        if wg_tid % 4 == 0:
            for rh in cutlass.range_constexpr(2):
                s_scale[t_cs[2 * rh][0], pb] = scale_o[rh]
        cute.arch.fence_proxy("async.shared", space="cta")  # P is read by warpgroup 1's wgmma
        cute.arch.barrier_arrive(barrier_id=BAR_P_FULL + pb, number_of_threads=2 * WG)

    # ---------------------------------------------------------------- warpgroup 1
    @cute.jit
    def _second(self, q, out, s_q, s_v, s_p, s_scale, s_fin, head_tile, split, row, n_chunks, wg_tid, bars):
        num_heads = q.shape[1]
        mma_pv = self._mma_pv(warpgroup.OperandSource.SMEM)
        thr_pv = mma_pv.get_slice(wg_tid)
        s_v_hi = cute.local_tile(s_v, (DV_PER_WG, self.N, self.kv_bufs), (1, 0, 0))
        acc_o = cute.make_rmem_tensor(thr_pv.partition_shape_C((self.M, DV_PER_WG)), Float32)
        acc_o.fill(0.0)
        t_co = thr_pv.partition_C(cute.make_identity_tensor((self.M, DV_PER_WG)))
        scale_o = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        for c in cutlass.range(n_chunks, unroll=1):
            buf = c % self.kv_bufs
            pb = c % 2
            self._tile_full(buf, c, bars)
            cute.arch.barrier(barrier_id=BAR_P_FULL + pb, number_of_threads=2 * WG)
            for rh in cutlass.range_constexpr(2):
                scale_o[rh] = s_scale[t_co[2 * rh][0], pb]
            self._rescale(acc_o, scale_o)
            t_sr_p = thr_pv.make_fragment_A(thr_pv.partition_A(s_p[None, None, pb]))
            t_or_v = thr_pv.make_fragment_B(thr_pv.partition_B(s_v_hi[None, None, buf]))
            warpgroup.fence()
            mma_pv.set(warpgroup.Field.ACCUMULATE, True)
            if cutlass.const_expr(self.drop != "mma"):
                for kb in cutlass.range_constexpr(cute.size(t_sr_p.shape[2])):
                    cute.gemm(mma_pv, acc_o, t_sr_p[None, None, kb], t_or_v[None, None, kb], acc_o)
            warpgroup.commit_group()
            warpgroup.wait_group(0)
            if c + 2 < n_chunks:
                cute.arch.barrier_arrive(barrier_id=BAR_P_EMPTY + pb, number_of_threads=2 * WG)
            if c + self.kv_bufs < n_chunks:
                self._tile_free(buf, bars)
        cute.arch.barrier(barrier_id=BAR_FIN, number_of_threads=2 * WG)
        inv = cute.make_rmem_tensor(cute.make_layout(2), Float32)
        for rh in cutlass.range_constexpr(2):
            inv[rh] = s_fin[t_co[2 * rh][0]]
        self._store_o(out, acc_o, t_co, inv, head_tile, split, row, num_heads, 1, s_q, wg_tid)
