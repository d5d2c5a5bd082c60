"""The producer warpgroup shared by both decode tilings: selected latent rows -> 16-bit K/V tiles.

It gathers the rows of `gather_tokens` selected tokens at a time with 16-byte `cp.async` copies into
a ring of raw FP8 stages, then converts each landed stage to FP16 (one `cvt.rn.f16x2.e4m3x2` per
two values) into the K/V tile the consumers read. A K/V tile holds `tile_tokens` tokens, one or
more gather stages; the consumers' FULL/EMPTY named barriers hand the tiles back and forth. Each
thread converts exactly the pieces it copied, so its own `cp.async.wait_group` orders the ring;
no barrier inside the producer. Row ids come from shared-memory windows filled a window ahead
(`id_window`), or straight from global memory one stage ahead (window 0).

Before the loop it also writes Q (BF16 -> FP16, rows past the head count zeroed) into the
consumers' swizzled Q tile.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float8E4M3FN, Int32, Uint8, Uint32
from cutlass.cute.nvgpu import cpasync

from .fp8_fragments import logical_dim, unit_swizzle
from .global_prefetch import prefetch_l2
from .split_resolve import SplitResolve, scratch_bytes
from .stream_resolve import StreamResolve

DIM = 512  # kv_lora_rank: the whole token
WG = 128
PIECE = 16  # bytes per cp.async

# Named barrier ids (0 is __syncthreads), shared by both tilings.
BAR_FULL = 1  # + K/V buffer (1..3): the producer filled it
BAR_EMPTY = 4  # + K/V buffer (4..6): its consumers are done with it
BAR_XCHG = 7  # heads-as-M: + chunk parity (7, 8), both consumers wrote their partial scores
BAR_Q = 9  # Q is in shared memory (consumers that keep Q in registers load it; the others stage O there)
BAR_IDS = 10  # producer only: a window of row ids is in shared memory
BAR_WG = 11  # tokens-as-M: + consumer (11, 12), the warps of one consumer warpgroup
BAR_MERGE = 13  # tokens-as-M: both consumers' partial results are in shared memory
# Heads as M with scores="one" (no score exchange: ids 7, 8 are free; 11..13 are tokens-as-M ids):
BAR_P_FULL = 7  # + P buffer (7, 8): consumer 0 wrote P and the rescale factors of a chunk
BAR_P_EMPTY = 11  # + P buffer (11, 12): consumer 1 is done with them
BAR_FIN = 13  # consumer 0 wrote the rows' output factors
# Heads as M, both score modes: + consumer (14, 15), the warps of one consumer staging its O half.
BAR_STAGE = 14
# Raw hand-over (convert=False; the tokens-as-M kernel uses no FULL/EMPTY/XCHG/Q barriers):
BAR_RAW_FULL = 1  # + ring slot (1..4): the slot's gather landed
BAR_RAW_EMPTY = 5  # + ring slot (5..8): its consumer converted it
RAW_SLOTS = (4, 6)  # two or three slots per consumer


def tokens_m_barriers(raw_slots: int):
    """(RAW_FULL base, RAW_EMPTY base, WG base, MERGE) of the tokens-as-M kernel. With six ring
    slots the hand-over takes ids 1..12, so the consumer barriers move to 13..15 (and there is no
    id left for BAR_IDS: six slots take id_window=0)."""
    if raw_slots <= 4:
        return BAR_RAW_FULL, BAR_RAW_EMPTY, BAR_WG, BAR_MERGE
    return 1, 1 + raw_slots, 1 + 2 * raw_slots, 3 + 2 * raw_slots


class LatentGather:
    def __init__(self, *, gather_tokens, tile_tokens, stages, kv_bufs, id_window, flat_cache, drop,
                 q_rows, handoff_threads, signal_q, convert=True, fragment_order=False, regs=40, fused_resolve=0,
                 stages_q=True, stream_resolve=False, physical_ids=False, pair=False, l2_prefetch=False):
        self.N = gather_tokens  # tokens per ring stage
        self.R = tile_tokens // gather_tokens  # ring stages per K/V tile
        self.stages = stages
        self.kv_bufs = kv_bufs
        self.id_window = id_window
        self.flat_cache = flat_cache
        self.drop = drop
        self.q_rows = q_rows  # rows of the Q tile (heads per CTA)
        self.handoff_threads = handoff_threads  # producer + the consumers of one K/V buffer
        self.signal_q = signal_q  # arrive on BAR_Q once Q is written
        # True: the producer converts each landed stage into the K/V tiles (FULL/EMPTY per tile).
        # False: it only gathers; each landed stage is handed over raw (RAW_FULL/RAW_EMPTY per
        # ring slot) and its consumer converts it with `convert_stage`. A named barrier counts
        # arrivals without knowing who arrives, so each ring slot belongs to one consumer (tiles
        # alternate between two consumers): half the slots each, reused every other tile.
        self.convert = convert
        self.slots_per_consumer = stages // 2
        if not convert:
            assert kv_bufs == 2 and stages in RAW_SLOTS and self.slots_per_consumer % self.R == 0, "whole tiles of ring slots per consumer"
            assert stages == 4 or id_window == 0, "six ring slots leave no barrier id for the id window"
        self.bar_raw_full, self.bar_raw_empty = tokens_m_barriers(stages)[:2]
        # True (convert="registers"): the consumers read the raw rows straight into wgmma fragments
        # (fp8_fragments): Q is stored in their dim order and rows with their unit swizzle.
        self.fragment_order = fragment_order
        assert not (fragment_order and convert)
        self.pieces_per_row = DIM // PIECE  # 32
        self.rows_per_pass = WG // self.pieces_per_row  # 4 token rows per producer pass
        self.row_passes = self.N // self.rows_per_pass
        self.q_vec = 8  # bf16 elements per 16-byte Q load
        # False: the consumers stage Q themselves (stage_q), so the producer's first row ids and
        # rows do not wait behind Q's loads.
        self.stages_q = stages_q
        # Q loads issued together before any is converted (4 registers each, out of the `regs` the
        # producer thread has): a load per round trip would cost 32 round trips for 64 heads.
        self.q_batch = self._q_batch(WG, (regs - 24) // 4)
        assert tile_tokens % gather_tokens == 0 and id_window % gather_tokens == 0
        # fused_resolve = S > 0: the producer resolves its own slice of at most S ids first (no
        # separate resolve launch); its batches of loads in flight fit the producer's registers.
        self.resolver = SplitResolve(
            WG, max(2, min(8, (regs - 56) // 8)), max(2, min(8, (regs - 40) // 4)), BAR_IDS, fused_resolve
        ) if fused_resolve else None
        assert not fused_resolve or self._scratch_capacity() >= scratch_bytes(fused_resolve)
        # stream_resolve: the producer resolves each id window itself, a window ahead of its gather
        # (`res` then ends with the step's shared memory, and takes the place of `phys`).
        self.streamer = StreamResolve(WG, id_window, BAR_IDS, max(2, min(8, (regs - 40) // 4))) if stream_resolve else None
        assert not (stream_resolve and (fused_resolve or id_window == 0))
        # physical_ids: the ids come from the caller, not from a resolve: out-of-cache ids are dropped.
        self.physical_ids = physical_ids
        assert not (physical_ids and (fused_resolve or stream_resolve))
        # pair: this CTA gathers one half of every K/V tile (`tile_tokens` of its 2 x tile_tokens
        # tokens; the cluster peer the other half) and stores it into both CTAs' tiles.
        self.pair = pair
        self.half = tile_tokens
        assert not (pair and (fused_resolve or stream_resolve or id_window == 0 or not convert))
        # l2_prefetch: the next id window's rows prefetched into L2 (DecodeVariant.prefetches_l2).
        self.l2_prefetch = l2_prefetch
        assert not (l2_prefetch and (id_window == 0 or stream_resolve))

    def _scratch_capacity(self) -> int:
        """Bytes of the shared memory the producer's own resolve borrows: the raw ring."""
        return self.stages * self.N * DIM

    @cute.jit
    def _id_at(self, phys, row, pos, total_rows):
        """phys[row, pos] clamped in bounds (the caller masks positions past the split). Ablation
        "ids": no load; a pseudo-random row from the position (the same random gather)."""
        v = Int32(0)
        if cutlass.const_expr(self.drop == "ids"):
            # Mixed with the query row: rows of different CTAs differ, as real selections do
            # (a position-only hash makes every CTA read the same rows, straight from L2).
            v = Int32((Uint32(pos + row * 7919) * Uint32(0x9E3779B1)) % Uint32(total_rows))
        else:
            v = phys[row, cutlass.min(pos, phys.shape[1] - 1)]
        return v

    @cute.jit
    def _in_cache(self, v, total_rows):
        """With physical_ids, a caller's id past the cache selects nothing (negatives already do):
        never read outside it. Applied where the id is used, not where it is loaded: a select on
        the loaded value waits for the load, and the id windows are loaded a window ahead (checked
        at the load, the producer waited for every window's ids: the decode ran 16% longer)."""
        if cutlass.const_expr(self.physical_ids):
            v = v if v < total_rows else Int32(-1)
        return v

    @cute.jit
    def _load_ids(self, ids, phys, row, pos0, end, total_rows):
        """ids[i] = phys[row, pos0 + 4i] for this thread's rows of a stage, -1 at or past `end`.
        The loads are unconditional (clamped in bounds) so they issue back to back."""
        for i in cutlass.range_constexpr(self.row_passes):
            pos = pos0 + self.rows_per_pass * i
            v = self._in_cache(self._id_at(phys, row, pos, total_rows), total_rows)
            ids[i] = v if pos < end else Int32(-1)

    @cute.jit
    def _pos(self, v):
        """The selection position (from the split's start) of this CTA's v-th gathered token: v
        itself, or with `pair` token v % half of its half of K/V tile v // half (the cluster's
        rank-r CTA takes tokens [r*half, (r+1)*half) of every tile)."""
        p = v
        if cutlass.const_expr(self.pair):
            rank = cute.arch.block_in_cluster_idx()[0]
            p = (v // self.half) * (2 * self.half) + rank * self.half + v % self.half
        return p

    @cute.jit
    def _load_window(self, pend, phys, row, start, k, wg_tid, total_rows):
        """This thread's ids of id window k (gathered tokens k*W + wg_tid + 128j): loads in flight."""
        for j in cutlass.range_constexpr(self.id_window // WG):
            pend[j] = self._id_at(phys, row, start + self._pos(k * self.id_window + wg_tid + WG * j), total_rows)

    @cute.jit
    def _store_window(self, pend, s_ids, slot, wg_tid, total_rows):
        for j in cutlass.range_constexpr(self.id_window // WG):
            s_ids[wg_tid + WG * j, slot] = self._in_cache(pend[j], total_rows)

    def _q_batch(self, threads: int, most: int) -> int:
        """Q loads per thread in flight together: at most `most`, dividing the thread's share."""
        passes = self.q_rows * DIM // self.q_vec // threads
        assert passes * self.q_vec * threads == self.q_rows * DIM
        batch = max(1, min(16, passes, most))
        while passes % batch:
            batch -= 1
        return batch

    @cute.jit
    def stage_q(self, q, s_q, head_tile, row, tid, threads: cutlass.Constexpr, batch: cutlass.Constexpr):
        """Q: bf16 -> fp16 into the swizzled tile by `threads` threads (this one is `tid`); rows
        past num_heads are zero. The loads of a batch are unconditional (a clamped head) so they
        are all in flight at once."""
        num_heads = q.shape[1]
        q_per_row = DIM // self.q_vec
        passes = self.q_rows * DIM // self.q_vec // threads
        for b in cutlass.range_constexpr(passes // batch):
            raw = cute.make_rmem_tensor(cute.make_layout((self.q_vec, batch)), q.element_type)
            for k in cutlass.range_constexpr(batch):
                piece = tid + threads * (b * batch + k)
                head = cutlass.min(head_tile * self.q_rows + piece // q_per_row, num_heads - 1)
                raw[None, k].store(cute.local_tile(q[row, head, None], (self.q_vec,), (piece % q_per_row,)).load())
            for k in cutlass.range_constexpr(batch):
                self._put_q(s_q, raw[None, k], head_tile, tid + threads * (b * batch + k), num_heads)

    @cute.jit
    def _put_q(self, s_q, raw, head_tile, piece, num_heads):
        """One loaded 8-element piece of Q (BF16) into the FP16 tile, zero past the head count."""
        q_per_row = DIM // self.q_vec
        h = piece // q_per_row
        c8 = piece % q_per_row
        rq = cute.make_rmem_tensor(cute.make_layout(self.q_vec), Float16)
        rq.fill(0.0)
        if head_tile * self.q_rows + h < num_heads:
            rq.store(raw.load().to(Float16))
        if cutlass.const_expr(self.fragment_order):
            # Physical dims 8*c8 + e go in (e // 2)-th pairs to logical_dim(8*c8) + 8 * (e // 2).
            first = logical_dim(c8 * self.q_vec)
            for k in cutlass.range_constexpr(self.q_vec // 2):
                cute.local_tile(s_q[h, None], (2,), (first // 2 + 4 * k,)).store(cute.local_tile(rq, (2,), (k,)).load())
        else:
            cute.local_tile(s_q[h, None], (self.q_vec,), (c8,)).store(rq.load())

    @cute.jit
    def _prologue(self, q, cache, phys, s_q, s_ids, head_tile, row, start, end, wg_tid, res, scratch):
        """What every producer does before its first row: (block size, cache rows, this thread's
        16-byte column and first token of a pass, first ids, pending id window). Q (unless the
        consumers stage it) is staged first: it does not depend on the resolve kernel, so under
        programmatic dependent launch it is staged while that kernel drains; the row ids do. With fused_resolve the producer resolves
        its slice itself, in `scratch` (shared memory it owns until its first hand-over)."""
        block_size = Int32(1)
        total_rows = cache.shape[0]
        if cutlass.const_expr(not self.flat_cache):
            block_size = cache.shape[1]
            total_rows = cache.shape[0] * block_size
        c16 = wg_tid % self.pieces_per_row
        tok0 = wg_tid // self.pieces_per_row
        if cutlass.const_expr(self.resolver is not None):
            first = self.resolver.prefetch(res, row, start, wg_tid)  # in flight while Q is staged
        if cutlass.const_expr(self.stages_q):
            self.stage_q(q, s_q, head_tile, row, wg_tid, WG, self.q_batch)
        if cutlass.const_expr(not self.convert):
            # Q is read by wgmma (the async proxy) after the first RAW_FULL hand-over.
            cute.arch.fence_proxy("async.shared", space="cta")
        if cutlass.const_expr(self.signal_q):
            cute.arch.barrier_arrive(barrier_id=BAR_Q, number_of_threads=3 * WG)
        cute.arch.griddepcontrol_wait()  # `phys` (the resolve kernel's output) is complete and visible
        if cutlass.const_expr(self.resolver is not None):
            self.resolver.run(res, phys, scratch, row, start, end, wg_tid, first)
        if cutlass.const_expr(self.streamer is not None):
            ids, pend = self._first_ids_streamed(res, s_ids, row, start, end, wg_tid)
        else:
            ids, pend = self._first_ids(phys, s_ids, row, start, end, tok0, wg_tid, total_rows)
        return block_size, total_rows, c16, tok0, ids, pend

    @cute.jit
    def _first_ids_streamed(self, res, s_ids, row, start, end, wg_tid):
        """(ids, pend) with the streamed resolve: window 0 resolved into s_ids[:, 0]; window 1's
        ids parked in shared memory and its block-table entries in flight in pend[0], window 2's
        ids in flight in pend[1]; pend[2, 0] the sequence length."""
        st = self.streamer
        indices, block_table, block_size, s_stream = res[0], res[2], res[3], res[5]
        ids = cute.make_rmem_tensor(cute.make_layout(self.row_passes), Int32)
        ids.fill(0)
        pend = cute.make_rmem_tensor(cute.make_layout((3, st.per_thread)), Int32)
        pend.fill(0)
        tok = cute.make_rmem_tensor(cute.make_layout(st.per_thread), Int32)
        blk = cute.make_rmem_tensor(cute.make_layout(st.per_thread), Int32)
        st.load_ids(tok, indices, row, start, Int32(0), wg_tid)
        st.load_ids(pend[1, None], indices, row, start, Int32(1), wg_tid)
        seq_len = st.begin(res, row, start, wg_tid)  # clears and the earlier splits' ids: under the loads
        st.load_blocks(blk, tok, block_table, block_size, row)
        st.resolve_window(res, s_ids, Int32(0), row, start, end, Int32(0), tok, blk, seq_len, wg_tid)
        st.park(s_stream, pend[1, None], wg_tid)
        cute.arch.barrier(barrier_id=BAR_IDS, number_of_threads=WG)
        st.parked(s_stream, tok, wg_tid)
        st.load_blocks(pend[0, None], tok, block_table, block_size, row)
        st.load_ids(pend[1, None], indices, row, start, Int32(2), wg_tid)
        pend[2, 0] = seq_len
        return ids, pend

    @cute.jit
    def _first_ids(self, phys, s_ids, row, start, end, tok0, wg_tid, total_rows):
        """(ids, pend): the first stage's row ids in registers (id_window 0), or the first id window
        in shared memory and the second one's loads in flight in `pend`."""
        ids = cute.make_rmem_tensor(cute.make_layout(self.row_passes), Int32)
        ids.fill(0)
        win = self.id_window
        pend = cute.make_rmem_tensor(cute.make_layout(max(win // WG, 1)), Int32)
        pend.fill(0)
        if cutlass.const_expr(self.drop != "gather"):
            if cutlass.const_expr(win > 0):
                # Ids of whole windows of W positions, double-buffered in shared memory: window
                # k+1's loads are issued when window k starts, so their latency hides behind W/N
                # stages instead of one.
                self._load_window(pend, phys, row, start, Int32(0), wg_tid, total_rows)
                self._store_window(pend, s_ids, Int32(0), wg_tid, total_rows)
                cute.arch.barrier(barrier_id=BAR_IDS, number_of_threads=WG)
                self._load_window(pend, phys, row, start, Int32(1), wg_tid, total_rows)
            else:
                self._load_ids(ids, phys, row, start + tok0, end, total_rows)
        return ids, pend

    @cute.jit
    def _window_step(self, pend, res, s_ids, row, start, end, k, wg_tid):
        """The streamed resolve's step for window k: its ids (parked) and block-table entries (in
        flight since a window ago) resolved into the slot that held k-2; window k+1's landed ids
        parked, then their block-table entries and window k+2's ids issued."""
        st = self.streamer
        tok = cute.make_rmem_tensor(cute.make_layout(st.per_thread), Int32)
        st.parked(res[5], tok, wg_tid)
        st.resolve_window(res, s_ids, k % 2, row, start, end, k, tok, pend[0, None], pend[2, 0], wg_tid)
        st.park(res[5], pend[1, None], wg_tid)
        cute.arch.barrier(barrier_id=BAR_IDS, number_of_threads=WG)
        st.parked(res[5], tok, wg_tid)
        st.load_blocks(pend[0, None], tok, res[2], res[3], row)
        st.load_ids(pend[1, None], res[0], row, start, k + 2, wg_tid)

    @cute.jit
    def _stage_ids(self, ids, pend, phys, s_ids, row, start, end, c, tok0, wg_tid, total_rows,
                   window_step: cutlass.Constexpr = True):
        """With an id window: stage c's row ids from shared memory into `ids` (-1 at or past
        `end`), first switching windows when stage c starts one (streamed: unless the caller runs
        the window step itself, `window_step=False`)."""
        cpw = self.id_window // self.N
        if cutlass.const_expr(self.streamer is not None):
            if cutlass.const_expr(window_step):
                if c % cpw == 0 and c > 0:
                    self._window_step(pend, phys, s_ids, row, start, end, c // cpw, wg_tid)  # phys is `res` here
        elif c % cpw == 0 and c > 0:
            # Window k = c / cpw landed (loaded a window ago) into the slot that held k-2,
            # which every producer thread finished reading before window k-1 began.
            k = c // cpw
            self._store_window(pend, s_ids, k % 2, wg_tid, total_rows)
            cute.arch.barrier(barrier_id=BAR_IDS, number_of_threads=WG)
            self._load_window(pend, phys, row, start, k + 1, wg_tid, total_rows)
        id_slot = (c // cpw) % 2  # which of the two id windows, and where this stage starts in it
        id_base = (c % cpw) * self.N
        # All of this stage's ids first (independent shared loads), then the copies.
        for i in cutlass.range_constexpr(self.row_passes):
            tok = tok0 + self.rows_per_pass * i
            ids[i] = s_ids[id_base + tok, id_slot] if start + self._pos(c * self.N + tok) < end else Int32(-1)

    @cute.jit
    def _prefetch_next_window(self, pend, cache, row, start, end, g, wg_tid, block_size, total_rows):
        """Half-way through id window k (gather stage g), the rows of window k+1 into L2: its ids were
        loaded into `pend` when window k began, so they have landed and reading them stalls
        nothing, and the prefetch holds no register. Holes, ids outside the cache and positions
        past the split prefetch nothing."""
        cpw = self.id_window // self.N
        if g % cpw == cpw // 2:
            k1 = g // cpw + 1
            for j in cutlass.range_constexpr(self.id_window // WG):
                ph = self._in_cache(pend[j], total_rows)
                if ph >= 0 and start + self._pos(k1 * self.id_window + wg_tid + WG * j) < end:
                    prefetch_l2(self._row_bytes(cache, ph, block_size).iterator.toint(), DIM)

    @cute.jit
    def _row_bytes(self, cache, ph, block_size):
        """The cache bytes of physical row `ph`."""
        if cutlass.const_expr(self.flat_cache):
            return cache[ph, None]  # blocks back to back: the row id is the row
        blk = ph // block_size
        return cache[blk, ph - blk * block_size, None]

    @cute.jit
    def raw_slot(self, s):
        """(ring slot, use count) of gather stage s when consumers own their slots: tile s // R goes
        to consumer (s // R) % 2, whose k-th stage takes its slot k % (slots per consumer)."""
        tile = s // self.R
        k = (tile // 2) * self.R + s % self.R
        return (tile % 2) * self.slots_per_consumer + k % self.slots_per_consumer, k

    @cute.jit
    def convert_stage(self, s_raw, s_k, s_vring, s_valid, slot, buf, row0, tid):
        """Raw ring slot `slot` -> rows [row0, row0 + N) of K/V tile `buf`, FP8 -> FP16, and its
        valid flags; thread `tid` (0..127) converts the same pieces it (or its producer twin) copied."""
        c16 = tid % self.pieces_per_row
        tok0 = tid // self.pieces_per_row
        for i in cutlass.range_constexpr(self.row_passes):
            tok = tok0 + self.rows_per_pass * i
            raw = cute.local_tile(s_raw[None, tok, slot], (PIECE,), (c16,))
            f8 = cute.make_tensor(cute.recast_ptr(raw.iterator, dtype=Float8E4M3FN), cute.make_layout(PIECE))
            if cutlass.const_expr(self.drop != "convert"):
                cute.local_tile(s_k[row0 + tok, None, buf], (PIECE,), (c16,)).store(f8.load().to(Float16))
            if c16 == 0:
                s_valid[row0 + tok, buf] = s_vring[tok, slot]

    @cute.jit
    def run(self, q, cache, phys, s_q, s_k, s_raw, s_vring, s_valid, s_ids, head_tile, row, start, end, n_tiles, wg_tid, res,
            bars=None):
        """Fill `n_tiles` K/V tiles with the selection positions [start, start + n_tiles * tile);
        positions at or past `end` become zero rows marked invalid. (`bars`: the pair's barriers;
        a pair gathers with ld_global, never here.)"""
        copy_atom = cute.make_copy_atom(
            cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), Uint8, num_bits_per_copy=128
        )
        if cutlass.const_expr(self.streamer is not None):
            phys = res  # the id windows come from the ids themselves (`_stage_ids`)
        block_size, total_rows, c16, tok0, ids, pend = self._prologue(
            q, cache, phys, s_q, s_ids, head_tile, row, start, end, wg_tid, res, s_raw.iterator
        )
        win = self.id_window

        zeros = cute.make_rmem_tensor(cute.make_layout(PIECE), Uint8)
        zeros.fill(0)
        n_stages = n_tiles * self.R
        for c in cutlass.range(n_stages + self.stages - 1, unroll=1):
            if c < n_stages:
                stage = c % self.stages
                # The streamed resolve's window step (hashing, two producer barriers) needs no ring
                # slot: it runs before the wait for one, under it when the consumers hold them all,
                # instead of between the slot's release and its copies.
                early_ids = self.streamer is not None and not self.convert
                if cutlass.const_expr(early_ids and win > 0 and self.drop != "gather"):
                    self._stage_ids(ids, pend, phys, s_ids, row, start, end, c, tok0, wg_tid, total_rows)
                if cutlass.const_expr(not self.convert):
                    stage, use = self.raw_slot(c)
                    if use >= self.slots_per_consumer:  # the owning consumer is done with what this slot held (4 stages ago)
                        cute.arch.barrier(barrier_id=self.bar_raw_empty + stage, number_of_threads=self.handoff_threads)
                if cutlass.const_expr(not early_ids and win > 0 and self.drop != "gather"):
                    self._stage_ids(ids, pend, phys, s_ids, row, start, end, c, tok0, wg_tid, total_rows)
                if cutlass.const_expr(self.l2_prefetch and self.drop != "gather"):
                    self._prefetch_next_window(pend, cache, row, start, end, c, wg_tid, block_size, total_rows)
                for i in cutlass.range_constexpr(self.row_passes):
                    tok = tok0 + self.rows_per_pass * i
                    ph = ids[i]
                    unit = c16
                    if cutlass.const_expr(self.fragment_order):
                        unit = c16 ^ unit_swizzle(tok)
                    dst = cute.local_tile(s_raw[None, tok, stage], (PIECE,), (unit,))
                    if cutlass.const_expr(self.drop != "gather"):
                        if ph >= 0:
                            row_bytes = self._row_bytes(cache, ph, block_size)
                            cute.copy(copy_atom, cute.local_tile(row_bytes, (PIECE,), (c16,)), dst)
                        else:
                            # A hole becomes a zero row: the conversion needs no ids, and V = 0
                            # keeps NaN bit patterns of stale bytes out of P V.
                            dst.store(zeros.load())
                    if c16 == 0:
                        s_vring[tok, stage] = Int32(ph >= 0)
                # The next stage's ids: in flight while this thread waits for and converts a stage.
                if cutlass.const_expr(self.drop != "gather" and win == 0):
                    self._load_ids(ids, phys, row, start + (c + 1) * self.N + tok0, end, total_rows)
            cute.arch.cp_async_commit_group()
            cc = c - (self.stages - 1)
            if cutlass.const_expr(not self.convert):
                if cc >= 0:
                    cute.arch.cp_async_wait_group(self.stages - 1)
                    # Lands 3 stages after its issue, before the slot's next use waits for it (4 stages).
                    cute.arch.barrier_arrive(barrier_id=self.bar_raw_full + self.raw_slot(cc)[0], number_of_threads=self.handoff_threads)
            else:
                if cc >= 0:
                    cute.arch.cp_async_wait_group(self.stages - 1)
                    tile = cc // self.R
                    part = cc % self.R  # which slice of the K/V tile this stage fills
                    buf = tile % self.kv_bufs
                    if tile >= self.kv_bufs and part == 0:
                        cute.arch.barrier(barrier_id=BAR_EMPTY + buf, number_of_threads=self.handoff_threads)
                    self.convert_stage(s_raw, s_k, s_vring, s_valid, cc % self.stages, buf, part * self.N, wg_tid)
                    if part == self.R - 1:
                        # Ordinary stores read next by wgmma (the async proxy).
                        cute.arch.fence_proxy("async.shared", space="cta")
                        cute.arch.barrier_arrive(barrier_id=BAR_FULL + buf, number_of_threads=self.handoff_threads)
