"""Selected-index NoPE MLA decode, tokens-as-M tiling for small head counts (H <= 32, sm_90a).

With heads as the wgmma M dimension a CTA pads its heads to 64 rows, so 8-32 heads pay for 64.
Here the roles swap: a chunk of 64 selected tokens is M and the CTA's heads are N (8, 16 or 32),
so tensor-core work scales with the real head count.

One CTA per (head tile, split of the selection, query row); 384 threads:

* warpgroup 2, the producer (`LatentGather`): gathers 32 tokens per raw ring stage. With
  convert="producer" it converts each landed stage into the 64-token FP16 K/V tile of the
  chunk's consumer (FULL/EMPTY per tile); with convert="consumer" it only gathers and hands each
  landed stage over raw (RAW_FULL/RAW_EMPTY per ring slot, two slots per consumer).
* warpgroups 0 and 1, the consumers, ping-pong on whole chunks: consumer w takes chunks
  w, w + 2, ... from K/V tile w, so one consumer's MMAs overlap the other's softmax. With
  convert="consumer" each first converts its chunk's two raw stages itself (freeing the ring
  slots at once): the conversion then never waits for a K/V tile to be released, and overlaps
  the other consumer's MMAs.
  - S^T = K Q^T: wgmma m64nHk16, A = the K tile (K-major), B = Q (K-major), both in shared memory;
  - softmax per head (a column) over the chunk's tokens (rows): max over the thread's two rows,
    the warp's 8 row groups (shuffles) and the 4 warps (shared memory); the running sum stays a
    per-thread partial until the end;
  - P^T (FP16) to shared memory, then O^T = V^T P^T: wgmma m64nHk16 over 8 tiles of 64 latent
    dims, A = the same K/V tile seen MN-major, B = P^T (K-major).
  At the end the two consumers merge their (max, sum, O) halves through shared memory, each
  writing 256 of the 512 output dims.

Scale folding as in the heads-as-M kernel: exp2 of acc * (softmax_scale * k_scale * log2 e);
v_scale multiplies the normalised output. Q must be inside the FP16 range (|q| < 65504).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float32, Int32, Uint8, Uint32
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
from cutlass.cute.nvgpu.warpgroup import SmemLayoutAtomKind
from cutlass.memory import SmemAllocator
import cutlass.utils.hopper_helpers as sm90_utils

from ..kernel_config import DecodeVariant
from .decode_common import DecodeKernelBase, resolve_args
from .fp8_fragments import convert_vt_kblock, fill_k_blocks, load_vt_kblock, output_dim
from .latent_gather import BAR_EMPTY, BAR_FULL, DIM, WG, LatentGather, tokens_m_barriers

M_DIMS = 64  # latent dims per PV wgmma (its M)
WARPS = WG // 32


class SparseDecodeTokensKernel(DecodeKernelBase):
    def __init__(self, variant: DecodeVariant):
        cfg = variant.config.validate()
        assert cfg.tiling == "tokens_m"
        self.variant = variant
        self.H = cfg.head_tile  # heads per CTA: the wgmma N
        self.heads_per_cta = self.H
        self.T = cfg.chunk_tokens  # tokens per chunk: the wgmma M of QK (64)
        self.stages = cfg.stages
        self.drop = variant.drop
        self.consumer_converts = cfg.convert == "consumer"
        self.register_fed = cfg.convert == "registers"
        self.G = cfg.gather_tokens()  # tokens per raw ring stage
        # Register-fed fragment buffers (two each, one filling while the other's wgmmas run):
        # 64-dim blocks per QK buffer (16 registers each) and 16-token k-blocks per PV buffer (32).
        # O^T takes 4H registers, so 32 heads get smaller QK buffers and one PV buffer.
        self.qk_blocks = 2 if self.H <= 16 else 1
        self.pv_buffers = 2 if self.H <= 16 else 1
        self.release_early = cfg.release_early
        if self.release_early:
            self.pv_buffers = 1  # the raw rows are in registers: converting a k-block waits on no load
        self.slots_per_consumer = self.stages // 2  # raw ring slots (convert="consumer"/"registers")
        self.bar_raw_full, self.bar_raw_empty, self.bar_wg, self.bar_merge = tokens_m_barriers(self.stages)
        self.ncol = self.H // 4  # head columns held by each thread (2 per 8-column block)
        self.half = self.H // 2  # accumulator elements per thread per 64-row tile
        # The consumers hold O^T (4H fp32) and S^T (H/2); the producer gets the rest of the 168 x 384 pool.
        self.regs_consumer, self.regs_producer = 216, 72
        assert 2 * WG * self.regs_consumer + WG * self.regs_producer <= 168 * 3 * WG
        self.num_threads = 3 * WG
        self.gather = LatentGather(
            gather_tokens=self.G, tile_tokens=self.T, stages=self.stages, kv_bufs=2,
            id_window=cfg.id_window, flat_cache=variant.flat_cache, drop=self.drop, q_rows=self.H,
            handoff_threads=2 * WG, signal_q=False, convert=cfg.convert == "producer", regs=self.regs_producer,
            fragment_order=self.register_fed, fused_resolve=cfg.fused_resolve_max_split() if variant.fused_resolve else 0,
            stream_resolve=variant.stream_resolve, physical_ids=variant.physical_ids, l2_prefetch=variant.prefetches_l2,
        )

    # ---------------------------------------------------------------- layouts
    def _layouts(self):
        k_atom = warpgroup.make_smem_layout_atom(SmemLayoutAtomKind.K_SW128, Float16)
        mn_atom = warpgroup.make_smem_layout_atom(SmemLayoutAtomKind.MN_SW128, Float16)
        s_q = cute.tile_to_shape(k_atom, (self.H, DIM), order=(0, 1))
        # The K/V tile [64 tokens, 512] K-major (A of QK), the same bytes as [512 dims, 64 tokens]
        # MN-major (A of PV); one per consumer.
        s_k = cute.tile_to_shape(k_atom, (self.T, DIM, 2), order=(0, 1, 2))
        s_v = cute.tile_to_shape(mn_atom, (DIM, self.T, 2), order=(1, 0, 2))
        # P^T per consumer: [heads, tokens] K-major, the B operand of PV.
        s_p = cute.tile_to_shape(k_atom, (self.H, self.T, 2), order=(0, 1, 2))
        s_raw = cute.make_layout((DIM, self.G, self.stages), stride=(1, DIM, DIM * self.G))
        return s_q, s_k, s_v, s_p, s_raw

    def _mmas(self):
        # Register-fed: both A operands (K, V^T) are fragments built from the raw rows.
        a_src = warpgroup.OperandSource.RMEM if self.register_fed else warpgroup.OperandSource.SMEM
        v_major = OperandMajorMode.K if self.register_fed else OperandMajorMode.MN
        mma_qk = sm90_utils.make_trivial_tiled_mma(
            Float16, Float16, OperandMajorMode.K, OperandMajorMode.K, Float32, (1, 1, 1), (self.T, self.H), a_source=a_src
        )
        mma_pv = sm90_utils.make_trivial_tiled_mma(
            Float16, Float16, v_major, OperandMajorMode.K, Float32, (1, 1, 1), (M_DIMS, self.H), a_source=a_src
        )
        return mma_qk, mma_pv

    def _slot(self, i):
        """Which of the thread's head columns accumulator element i belongs to (static): the C
        fragment is ((2 cols, 2 row halves, H/8 column blocks), row tiles)."""
        return (i % 2) + 2 * ((i // 4) % (self.H // 8))

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
        head_tile, split, row, wg_idx, wg_tid, start, end, n_chunks = self._cta(phys, split_len, self.T)

        s_q_l, s_k_l, s_v_l, s_p_l, s_raw_l = self._layouts()
        smem = SmemAllocator()
        s_q = smem.allocate_tensor(Float16, s_q_l.outer, byte_alignment=1024, swizzle=s_q_l.inner)
        s_p = smem.allocate_tensor(Float16, s_p_l.outer, byte_alignment=1024, swizzle=s_p_l.inner)
        s_raw = smem.allocate_tensor(Uint8, s_raw_l, byte_alignment=1024)
        s_k = s_raw  # register-fed: no K/V tiles (never read as such)
        s_v = s_raw
        # After the main loop, an fp32 scratch for the merge of the two consumers: each writes into
        # memory only it used, its K/V tile or (register-fed) its half of the raw ring.
        scratch = s_raw.iterator
        per_consumer = cute.cosize(s_raw_l) // 2
        if cutlass.const_expr(not self.register_fed):
            # The K/V tiles are raw bytes seen three ways: swizzled K and V, and the merge scratch.
            per_consumer = cute.cosize(s_k_l.outer)  # two K/V buffers of 2-byte elements
            scratch = smem.allocate(per_consumer * 2, byte_alignment=1024)
            s_k = cute.make_tensor(cute.recast_ptr(scratch, s_k_l.inner, dtype=Float16), s_k_l.outer)
            s_v = cute.make_tensor(s_k.iterator, s_v_l.outer)
        s_merge = cute.make_tensor(
            cute.recast_ptr(scratch, dtype=Float32),
            cute.make_layout((4 * self.half, WG, 2), stride=(WG, 1, per_consumer // 4)),
        )
        s_red = smem.allocate_tensor(Float32, cute.make_layout((self.H, WARPS, 2)), byte_alignment=16)
        s_stat = smem.allocate_tensor(Float32, cute.make_layout((self.H, 2, 2)), byte_alignment=16)
        s_valid = smem.allocate_tensor(Int32, cute.make_layout((self.T, 2)), byte_alignment=16)
        s_vring = smem.allocate_tensor(Int32, cute.make_layout((self.G, self.stages)), byte_alignment=16)
        s_ids = smem.allocate_tensor(Int32, cute.make_layout((max(self.gather.id_window, 1), 2)), byte_alignment=16)
        res = resolve_args(self.variant, self.gather.id_window, smem, indices, seq_lens, block_table, block_size, num_blocks)

        if wg_idx == 2:
            cute.arch.setmaxregister_decrease(self.regs_producer)
            self.gather.run(q, cache, phys, s_q, s_k, s_raw, s_vring, s_valid, s_ids, head_tile, row, start, end, n_chunks, wg_tid, res)
        else:
            cute.arch.setmaxregister_increase(self.regs_consumer)
            self._consumer(
                q, k_scale, v_scale, softmax_scale, out, lse, s_q, s_k, s_v, s_p, s_red, s_stat, s_merge,
                s_raw, s_vring, s_valid, head_tile, split, row, n_chunks, wg_idx, wg_tid,
            )

    # ---------------------------------------------------------------- consumer steps
    @cute.jit
    def _issue_qk(self, s_k, s_q, acc_s, wg_tid, buf):
        """S^T = K Q^T for the chunk in K/V buffer `buf` (committed, not waited). The tiled MMA is
        re-made here: its ACCUMULATE state must not escape a loop body."""
        mma_qk = self._mmas()[0]
        thr = mma_qk.get_slice(wg_tid)
        t_k = thr.make_fragment_A(thr.partition_A(s_k[None, None, buf]))
        t_q = thr.make_fragment_B(thr.partition_B(s_q))
        warpgroup.fence()
        mma_qk.set(warpgroup.Field.ACCUMULATE, False)
        if cutlass.const_expr(self.drop != "mma"):
            for kb in cutlass.range_constexpr(cute.size(t_k.shape[2])):
                cute.gemm(mma_qk, acc_s, t_k[None, None, kb], t_q[None, None, kb], acc_s)
                mma_qk.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.commit_group()

    @cute.jit
    def _issue_pv(self, s_v, s_p, acc_o, wg_tid, buf):
        """O^T += V^T P^T for the chunk in K/V buffer `buf` (committed, not waited)."""
        mma_pv = self._mmas()[1]
        thr = mma_pv.get_slice(wg_tid)
        t_v = thr.make_fragment_A(thr.partition_A(s_v[None, None, buf]))
        t_p = thr.make_fragment_B(thr.partition_B(s_p[None, None, buf]))
        warpgroup.fence()
        mma_pv.set(warpgroup.Field.ACCUMULATE, True)
        if cutlass.const_expr(self.drop != "mma"):
            for kb in cutlass.range_constexpr(cute.size(t_v.shape[2])):
                cute.gemm(mma_pv, acc_o, t_v[None, None, kb], t_p[None, None, kb], acc_o)
        warpgroup.commit_group()

    @cute.jit
    def _qk_from_raw(self, s_raw32, s_q, acc_s, slot, wg_tid):
        """S^T = K Q^T with K converted from ring slot `slot` straight into A fragments, two
        buffers of `qk_blocks` 64-dim blocks: one fills while the other's wgmmas run. Waited."""
        mma_qk = self._mmas()[0]
        thr = mma_qk.get_slice(wg_tid)
        t_q = thr.make_fragment_B(thr.partition_B(s_q))
        nb = self.qk_blocks
        frags = [thr.make_fragment_A(thr.partition_shape_A((self.T, 64 * nb))) for _ in range(2)]
        mma_qk.set(warpgroup.Field.ACCUMULATE, False)
        for step in cutlass.range_constexpr(DIM // 64 // nb):
            frag = frags[step % 2]
            if cutlass.const_expr(step >= 2):
                warpgroup.wait_group(1)  # the wgmmas that read this buffer two steps ago are done
            fill_k_blocks(cute.recast_tensor(frag, Uint32), s_raw32, slot, step * nb, nb, wg_tid, self.drop != "convert")
            warpgroup.fence()
            if cutlass.const_expr(self.drop != "mma"):
                for kb in cutlass.range_constexpr(4 * nb):
                    cute.gemm(mma_qk, acc_s, frag[None, None, kb], t_q[None, None, 4 * nb * step + kb], acc_s)
                    mma_qk.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
        warpgroup.wait_group(0)

    @cute.jit
    def _pv_from_raw(self, s_raw32, s_p, acc_o, slot, release, wg_idx, wg_tid, held):
        """O^T += V^T P^T with V^T converted from ring slot `slot` into A fragments, one 16-token
        k-block (all 8 m-tiles) per buffer. The slot is handed back (`release`) once read. With
        release_early the raw rows were read before the softmax (`held`, per k-block). Waited."""
        mma_pv = self._mmas()[1]
        thr = mma_pv.get_slice(wg_tid)
        t_p = thr.make_fragment_B(thr.partition_B(s_p[None, None, wg_idx]))
        frags = [thr.make_fragment_A(thr.partition_shape_A((DIM, 16))) for _ in range(self.pv_buffers)]
        mma_pv.set(warpgroup.Field.ACCUMULATE, True)
        for kb in cutlass.range_constexpr(self.T // 16):
            frag = frags[kb % self.pv_buffers]
            if cutlass.const_expr(kb >= self.pv_buffers):
                warpgroup.wait_group(self.pv_buffers - 1)
            units = held[kb] if cutlass.const_expr(self.release_early) else load_vt_kblock(s_raw32, slot, kb, wg_tid)
            convert_vt_kblock(cute.recast_tensor(frag, Uint32), units, self.drop != "convert")
            if cutlass.const_expr(kb == self.T // 16 - 1 and not self.release_early):
                if release:
                    cute.arch.barrier_arrive(barrier_id=self.bar_raw_empty + slot, number_of_threads=2 * WG)
            warpgroup.fence()
            if cutlass.const_expr(self.drop != "mma"):
                cute.gemm(mma_pv, acc_o, frag[None, None, 0], t_p[None, None, kb], acc_o)
            warpgroup.commit_group()
        warpgroup.wait_group(0)

    @cute.jit
    def _warpgroup_columns(self, vals, s_red, t_cs, wg_idx, wg_tid, is_max: cutlass.Constexpr):
        """Reduce per-thread column values (max or sum over the thread's rows) over the whole
        warpgroup's 64 rows: shuffles over the warp's 8 row groups, then the 4 warps through shared
        memory. Every thread ends with the totals of its own columns."""
        lane = wg_tid % 32
        warp = wg_tid // 32
        for k in cutlass.range_constexpr(self.ncol):
            v = vals[k]
            for off in cutlass.range_constexpr(3):
                o = cute.arch.shuffle_sync_bfly(v, offset=4 << off)
                v = cute.arch.fmax(v, o) if cutlass.const_expr(is_max) else v + o
            vals[k] = v
        if lane < 4:
            for k in cutlass.range_constexpr(self.ncol):
                s_red[t_cs[(k % 2) + 4 * (k // 2)][1], warp, wg_idx] = vals[k]
        cute.arch.barrier(barrier_id=self.bar_wg + wg_idx, number_of_threads=WG)
        for k in cutlass.range_constexpr(self.ncol):
            col = t_cs[(k % 2) + 4 * (k // 2)][1]
            v = s_red[col, 0, wg_idx]
            for w in cutlass.range_constexpr(1, WARPS):
                v = cute.arch.fmax(v, s_red[col, w, wg_idx]) if cutlass.const_expr(is_max) else v + s_red[col, w, wg_idx]
            vals[k] = v

    @cute.jit
    def _softmax(self, acc_s, valid, s_red, t_cs, col_max, col_sum, scale_c, scale_log2, wg_idx, wg_tid):
        """Mask and scale the chunk's S^T, update each head's running max and this thread's partial
        sum; leave P in `acc_s` and the factor O^T's columns must be scaled by in `scale_c`.
        `valid`: the chunk's 64 token flags."""
        cmax = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        cmax.fill(-Float32.inf)
        for i in cutlass.range_constexpr(cute.size(acc_s)):
            v = acc_s[i] * scale_log2
            flag = Int32(0)
            if cutlass.const_expr(self.release_early):
                flag = valid[(i // 2) % 2]  # the thread's two rows' flags (row half of element i)
            else:
                flag = valid[t_cs[i][0]]
            if flag == 0:
                v = -Float32.inf
            acc_s[i] = v
            cmax[self._slot(i)] = cute.arch.fmax(cmax[self._slot(i)], v)
        self._warpgroup_columns(cmax, s_red, t_cs, wg_idx, wg_tid, True)
        base = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        for k in cutlass.range_constexpr(self.ncol):
            m = cute.arch.fmax(col_max[k], cmax[k])
            b = m
            if m == -Float32.inf:
                b = Float32(0.0)  # nothing selected yet: keep exp2 finite
            scale_c[k] = cute.math.exp2(col_max[k] - b, fastmath=True)
            col_max[k] = m
            base[k] = b
            col_sum[k] = col_sum[k] * scale_c[k]
        for i in cutlass.range_constexpr(cute.size(acc_s)):
            k = self._slot(i)
            p = cute.math.exp2(acc_s[i] - base[k], fastmath=True)
            col_sum[k] = col_sum[k] + p
            acc_s[i] = p

    @cute.jit
    def _rescale(self, acc_o, scale_c):
        # Every factor is <= 1. Once the running maxima settle most chunks leave them all at 1:
        # skip the 4H multiplies.
        smallest = scale_c[0]
        for k in cutlass.range_constexpr(1, self.ncol):
            smallest = cute.arch.fmin(smallest, scale_c[k])
        if smallest != 1.0:
            for i in cutlass.range(cute.size(acc_o), unroll_full=True):
                acc_o[i] = acc_o[i] * scale_c[(i % 2) + 2 * ((i // 4) % (self.H // 8))]

    # ---------------------------------------------------------------- consumers
    @cute.jit
    def _consumer(
        self, q, k_scale, v_scale, softmax_scale, out, lse, s_q, s_k, s_v, s_p, s_red, s_stat, s_merge,
        s_raw, s_vring, s_valid, head_tile, split, row, n_chunks, wg_idx, wg_tid,
    ):
        scale_log2, vs = self._scales(k_scale, v_scale, softmax_scale)

        mma_qk, mma_pv = self._mmas()
        thr_qk = mma_qk.get_slice(wg_tid)
        thr_pv = mma_pv.get_slice(wg_tid)
        acc_s = cute.make_rmem_tensor(thr_qk.partition_shape_C((self.T, self.H)), Float32)
        acc_o = cute.make_rmem_tensor(thr_pv.partition_shape_C((DIM, self.H)), Float32)
        acc_o.fill(0.0)
        t_cs = thr_qk.partition_C(cute.make_identity_tensor((self.T, self.H)))
        t_co = thr_pv.partition_C(cute.make_identity_tensor((DIM, self.H)))
        # P^T [heads, tokens] seen as [tokens, heads]: stored through the score accumulator's layout.
        s_p_mine = s_p[None, None, wg_idx]
        t_sp = thr_qk.partition_C(cute.make_tensor(s_p_mine.iterator, cute.select(s_p_mine.layout, mode=[1, 0])))

        col_max = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        col_sum = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        scale_c = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        col_max.fill(-Float32.inf)
        col_sum.fill(0.0)

        n_mine = Int32(0)
        if n_chunks > wg_idx:
            n_mine = (n_chunks - wg_idx + 1) // 2
        s_raw32 = cute.recast_tensor(s_raw, Uint32)
        for j in cutlass.range(n_mine, unroll=1):
            c = wg_idx + 2 * j
            valid = s_valid[None, wg_idx]
            held = None  # release_early: the chunk's raw V^T rows, read before the softmax
            # Register-fed: the chunk's 64 rows sit in one ring slot (LatentGather.raw_slot:
            # S w + j % S for S slots per consumer), read into fragments twice (K, then V^T) and
            # handed back after the V^T reads.
            slot = self.slots_per_consumer * wg_idx + j % self.slots_per_consumer
            if cutlass.const_expr(self.register_fed):
                cute.arch.barrier(barrier_id=self.bar_raw_full + slot, number_of_threads=2 * WG)
                self._qk_from_raw(s_raw32, s_q, acc_s, slot, wg_tid)
                valid = s_vring[None, slot]
                if cutlass.const_expr(self.release_early):
                    # Everything this chunk still needs from the slot, into registers: the V^T rows
                    # and the valid flags of the thread's two score rows; then the slot goes back.
                    held = [load_vt_kblock(s_raw32, slot, kb, wg_tid) for kb in range(self.T // 16)]
                    valid = cute.make_rmem_tensor(cute.make_layout(2), Int32)
                    for rh in cutlass.range_constexpr(2):
                        valid[rh] = s_vring[16 * (wg_tid // 32) + (wg_tid % 32) // 4 + 8 * rh, slot]
                    if j + self.slots_per_consumer < n_mine:
                        cute.arch.barrier_arrive(barrier_id=self.bar_raw_empty + slot, number_of_threads=2 * WG)
            else:
                if cutlass.const_expr(self.consumer_converts):
                    # This chunk's two raw stages -> this consumer's FP16 K/V tile, each ring slot handed
                    # back as soon as it is converted. (The RAW_FULL sync also keeps every warp of this
                    # warpgroup from converting before all finished the previous chunk's wgmma.)
                    for part in cutlass.range_constexpr(2):
                        k = 2 * j + part  # this consumer's k-th stage: ring slot 2w + k % 2 (LatentGather.raw_slot)
                        cslot = 2 * wg_idx + part
                        cute.arch.barrier(barrier_id=self.bar_raw_full + cslot, number_of_threads=2 * WG)
                        self.gather.convert_stage(s_raw, s_k, s_vring, s_valid, cslot, wg_idx, part * self.G, wg_tid)
                        if k + 2 < 2 * n_mine:
                            cute.arch.barrier_arrive(barrier_id=self.bar_raw_empty + cslot, number_of_threads=2 * WG)
                    # Ordinary stores read next by wgmma (the async proxy), from all four warps.
                    cute.arch.fence_proxy("async.shared", space="cta")
                    cute.arch.barrier(barrier_id=self.bar_wg + wg_idx, number_of_threads=WG)
                else:
                    cute.arch.barrier(barrier_id=BAR_FULL + wg_idx, number_of_threads=2 * WG)
                self._issue_qk(s_k, s_q, acc_s, wg_tid, wg_idx)
                warpgroup.wait_group(0)
            self._softmax(acc_s, valid, s_red, t_cs, col_max, col_sum, scale_c, scale_log2, wg_idx, wg_tid)
            t_sp.store(acc_s.load().to(Float16))
            # Ordinary stores read next by wgmma (the async proxy), from all four warps.
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier(barrier_id=self.bar_wg + wg_idx, number_of_threads=WG)
            self._rescale(acc_o, scale_c)
            if cutlass.const_expr(self.register_fed):
                self._pv_from_raw(s_raw32, s_p, acc_o, slot, j + self.slots_per_consumer < n_mine, wg_idx, wg_tid, held)
            else:
                self._issue_pv(s_v, s_p, acc_o, wg_tid, wg_idx)
                warpgroup.wait_group(0)
                if cutlass.const_expr(not self.consumer_converts):
                    if c + 2 < n_chunks:
                        cute.arch.barrier_arrive(barrier_id=BAR_EMPTY + wg_idx, number_of_threads=2 * WG)

        self._warpgroup_columns(col_sum, s_red, t_cs, wg_idx, wg_tid, False)
        # Each consumer writes the 256 dims the other one outputs into its own (finished) K/V
        # buffer, and its per-head (max, sum); then each merges and writes its own 256 dims.
        if wg_idx == 0:
            self._merge_and_store(q.shape[1], acc_o, col_max, col_sum, vs, s_stat, s_merge, t_cs, t_co, out, lse, head_tile, split, row, wg_tid, 0)
        else:
            self._merge_and_store(q.shape[1], acc_o, col_max, col_sum, vs, s_stat, s_merge, t_cs, t_co, out, lse, head_tile, split, row, wg_tid, 1)

    @cute.jit
    def _merge_and_store(
        self, num_heads, acc_o, col_max, col_sum, vs, s_stat, s_merge, t_cs, t_co, out, lse, head_tile, split, row, wg_tid,
        w: cutlass.Constexpr,
    ):
        other = 1 - w
        tiles = DIM // M_DIMS // 2  # row tiles of 64 dims per output half
        for mt in cutlass.range_constexpr(tiles):
            for r in cutlass.range_constexpr(self.half):
                s_merge[mt * self.half + r, wg_tid, w] = acc_o[r + self.half * (tiles * other + mt)]
        if wg_tid < 4:
            for k in cutlass.range_constexpr(self.ncol):
                col = t_cs[(k % 2) + 4 * (k // 2)][1]
                s_stat[col, 0, w] = col_max[k]
                s_stat[col, 1, w] = col_sum[k]
        cute.arch.barrier(barrier_id=self.bar_merge, number_of_threads=2 * WG)

        f_mine = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        f_other = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        inv = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        lse_val = cute.make_rmem_tensor(cute.make_layout(self.ncol), Float32)
        for k in cutlass.range_constexpr(self.ncol):
            col = t_cs[(k % 2) + 4 * (k // 2)][1]
            m_o = s_stat[col, 0, other]
            m = cute.arch.fmax(col_max[k], m_o)
            b = m
            if m == -Float32.inf:
                b = Float32(0.0)
            f_mine[k] = cute.math.exp2(col_max[k] - b, fastmath=True)
            f_other[k] = cute.math.exp2(m_o - b, fastmath=True)
            s = col_sum[k] * f_mine[k] + s_stat[col, 1, other] * f_other[k]
            inv[k], lse_val[k] = self._normaliser(s, b, vs)
        for mt in cutlass.range_constexpr(tiles):
            for r in cutlass.range_constexpr(self.half):
                i = r + self.half * (tiles * w + mt)
                k = self._slot(r)
                val = (acc_o[i] * f_mine[k] + s_merge[mt * self.half + r, wg_tid, other] * f_other[k]) * inv[k]
                coord = t_co[i]
                head = head_tile * self.H + coord[1]
                dim = coord[0]
                if cutlass.const_expr(self.register_fed):
                    dim = output_dim(coord[0])  # O^T rows are in the V^T fragment order
                if head < num_heads:
                    self._store_out(out, row, split, head, dim, val)
        if cutlass.const_expr(self.variant.write_lse or self.variant.split):
            if cutlass.const_expr(w == 0):
                if wg_tid < 4:
                    for k in cutlass.range_constexpr(self.ncol):
                        head = head_tile * self.H + t_cs[(k % 2) + 4 * (k // 2)][1]
                        if head < num_heads:
                            self._store_lse(lse, row, split, head, lse_val[k])
