"""The heads-as-M producer with gather="ld_global": selected latent rows -> FP16 K/V tiles through
registers, with no raw FP8 ring in shared memory.

Each thread loads its 16-byte pieces of a group of 16 tokens with `ld.global` into one of `stages`
register sets, so `stages - 1` groups are in flight while it converts the oldest one
(`cvt.rn.f16x2.e4m3x2`) and stores it into the consumers' swizzled K/V tile. Compared with the
cp.async ring this frees `stages` x 16-token raw stages of shared memory (room for 64-token K/V
tiles) and drops a shared-memory write and read per byte gathered. The register sets are
indexed by constants: the loop over groups is unrolled over whole register sets and K/V tiles.
Up to 4 sets fit the producer's 120 registers (16 each; a fifth spills there); with one scorer a
fifth and sixth set take 16 registers each from the scorer (`SharedPDecodeKernel._register_plan`).

Row ids, Q staging, holes (zero rows marked invalid) and the FULL/EMPTY hand-over are as in
`LatentGather`.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Int32, Uint32

from .cluster_store import peer_address, st_async_b32, st_async_v4
from .fp8_fragments import cvt_high, cvt_low
from .latent_gather import BAR_EMPTY, BAR_FULL, DIM, PIECE, LatentGather

WORDS = PIECE // 4  # 32-bit words per 16-byte piece


class DirectLatentGather(LatentGather):
    """`LatentGather` with `gather_tokens` tokens per register set and `stages` register sets."""

    def _early_window_step(self) -> bool:
        """Streamed resolve: run window k's step right before the EMPTY wait of the tile store
        that precedes the issue of the window's first group (hidden under the wait when the
        consumers are behind), not inside that issue. Needs that store to start a tile (window
        starts, register sets and tiles in whole tiles) and every window after the first to start
        past the groups issued before the main loop."""
        cpw = self.id_window // self.N if self.id_window else 0
        return (self.streamer is not None and cpw >= self.stages and cpw % self.R == 0
                and self.stages % self.R == 0)

    @cute.jit
    def _issue(self, raw, valid, ids, pend, cache, phys, s_ids, row, start, end, g, s: cutlass.Constexpr,
               c16, tok0, wg_tid, block_size, total_rows):
        """Loads of group g into register set s (holes and positions past `end` load nothing: zero
        rows, invalid); with id window 0 the next group's ids are then loaded one group ahead."""
        if cutlass.const_expr(self.id_window > 0 and self.drop != "gather"):
            self._stage_ids(ids, pend, phys, s_ids, row, start, end, g, tok0, wg_tid, total_rows,
                            not self._early_window_step())
            if cutlass.const_expr(self.l2_prefetch):
                self._prefetch_next_window(pend, cache, row, start, end, g, wg_tid, block_size, total_rows)
        for i in cutlass.range_constexpr(self.row_passes):
            ph = ids[i]
            raw[None, i, s].fill(0)
            if cutlass.const_expr(self.drop != "gather"):
                if ph >= 0:
                    piece = cute.local_tile(self._row_bytes(cache, ph, block_size), (PIECE,), (c16,))
                    raw[None, i, s].store(cute.make_tensor(cute.recast_ptr(piece.iterator, dtype=Uint32), cute.make_layout(WORDS)).load())
            if i == 0:
                valid[s] = Int32(ph >= 0)
            else:
                valid[s] = valid[s] | (Int32(ph >= 0) << i)
        if cutlass.const_expr(self.drop != "gather" and self.id_window == 0):
            self._load_ids(ids, phys, row, start + (g + 1) * self.N + tok0, end, total_rows)

    @cute.jit
    def _store(self, raw, valid, s_k, s_valid, g, s: cutlass.Constexpr, part: cutlass.Constexpr, c16, tok0, bars):
        """Group g (part `part` of its K/V tile) from register set s -> its rows of the tile
        (FP8 -> FP16), waiting for the tile's EMPTY first and handing it over (FULL) after its last
        group. With `pair` the rows are this CTA's half of the tile and go to the peer's tile too."""
        tile = g // self.R
        buf = tile % self.kv_bufs
        if cutlass.const_expr(part == 0):
            if tile >= self.kv_bufs:
                cute.arch.barrier(barrier_id=BAR_EMPTY + buf, number_of_threads=self.handoff_threads)
                if cutlass.const_expr(self.pair):
                    # The peer's consumers are done with their copy of the tile too (its 8 warps arrived).
                    cute.arch.mbarrier_wait(bars + self.kv_bufs + buf, (tile // self.kv_bufs - 1) % 2)
            if cutlass.const_expr(self.pair):
                if c16 == 0 and tok0 == 0:
                    # The bytes the peer will store into this CTA's tile (its half), counted by PEER_FULL.
                    cute.arch.mbarrier_arrive_and_expect_tx(bars + buf, self.half * (DIM * 2 + 4))
        row0 = 0
        peer = None
        if cutlass.const_expr(self.pair):
            row0 = cute.arch.block_in_cluster_idx()[0] * self.half
            peer = self._peer_bases(s_k, s_valid, bars, buf)
        # A row is 8 swizzle atoms of 64 dims, n x 128 bytes apart: lanes 4a..4a+3 write atom a.
        # Odd atoms store their upper 16 bytes first, so each store fills all eight 16-byte bank
        # groups of a 128-byte line (even atoms: units 0,2,4,6; odd atoms: 1,3,5,7).
        first = (c16 // 4) % 2
        for i in cutlass.range_constexpr(self.row_passes):
            tok = row0 + part * self.N + tok0 + self.rows_per_pass * i
            h = cute.make_rmem_tensor(cute.make_layout(2 * PIECE), Float16)
            h32 = cute.recast_tensor(h, Uint32)
            for w in cutlass.range_constexpr(WORDS):
                h32[2 * w] = cvt_low(raw[w, i, s], self.drop != "convert")
                h32[2 * w + 1] = cvt_high(raw[w, i, s], self.drop != "convert")
            dst = cute.local_tile(s_k[tok, None, buf], (PIECE,), (c16,))
            for j in cutlass.range_constexpr(2):
                half = first ^ j
                # Selected by value: a register array indexed by a runtime value would live in local memory.
                v = cute.make_rmem_tensor(cute.make_layout(PIECE // 2), Float16)
                v32 = cute.recast_tensor(v, Uint32)
                for k in cutlass.range_constexpr(WORDS):
                    v32[k] = h32[WORDS + k] if half == 1 else h32[k]
                cute.local_tile(dst, (PIECE // 2,), (half,)).store(v.load())
                if cutlass.const_expr(self.pair):
                    self._to_peer(peer, v32, tok, c16 * 2 + half, buf)
            if c16 == 0:
                s_valid[tok, buf] = (valid[s] >> i) & 1
                if cutlass.const_expr(self.pair):
                    st_async_b32(peer[1] + 4 * (tok + 2 * self.half * buf), (valid[s] >> i) & 1, peer[2])
        if cutlass.const_expr(part == self.R - 1):
            # Ordinary stores read next by wgmma (the async proxy).
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier_arrive(barrier_id=BAR_FULL + buf, number_of_threads=self.handoff_threads)

    @cute.jit
    def _peer_bases(self, s_k, s_valid, bars, buf):
        """The peer's K/V tiles, valid flags and PEER_FULL[buf] as shared::cluster addresses."""
        peer = 1 - cute.arch.block_in_cluster_idx()[0]
        return (peer_address(s_k.iterator.toint(), peer), peer_address(s_valid.iterator.toint(), peer),
                peer_address((bars + buf).toint(), peer))

    @cute.jit
    def _to_peer(self, peer, v32, tok, unit, buf):
        """The 16-byte unit `unit` (dims 8*unit ..) of row `tok` of K/V tile `buf`, just stored
        here, into the peer's tile with st.async (completion counted by the peer's PEER_FULL).
        The byte offset is the tile layout's (8-row atoms of 128-byte rows, 64 rows per 64 dims,
        64 KB per tile) with its 128-byte swizzle: the 16-byte unit ^= the row within the atom."""
        r8 = tok % 8
        off = r8 * 128 + (tok // 8) * 1024 + ((unit % 8) ^ r8) * 16 + (unit // 8) * (self.half * 2 * 128) + buf * (self.half * 2 * DIM * 2)
        st_async_v4(peer[0] + off, (v32[0], v32[1], v32[2], v32[3]), peer[2])

    def _scratch_capacity(self) -> int:
        return self.kv_bufs * self.R * self.N * DIM * 2  # the FP16 K/V tiles

    @cute.jit
    def _scratch(self, s_k):
        """Shared memory for the producer's own resolve: the K/V tiles (no consumer reads them
        before the first FULL)."""
        return s_k.iterator

    @cute.jit
    def run(self, q, cache, phys, s_q, s_k, s_raw, s_vring, s_valid, s_ids, head_tile, row, start, end, n_tiles, wg_tid, res,
            bars=None):
        """Fill `n_tiles` K/V tiles with the selection positions [start, start + n_tiles * tile);
        positions at or past `end` become zero rows marked invalid. (`s_raw`, `s_vring`: unused.)
        `bars` (pair only): PEER_FULL and PEER_EMPTY mbarriers, kv_bufs each."""
        if cutlass.const_expr(self.streamer is not None):
            phys = res  # the id windows come from the ids themselves (`_stage_ids`)
        block_size, total_rows, c16, tok0, ids, pend = self._prologue(
            q, cache, phys, s_q, s_ids, head_tile, row, start, end, wg_tid, res, self._scratch(s_k)
        )

        sets = self.stages
        raw = cute.make_rmem_tensor(cute.make_layout((WORDS, self.row_passes, sets)), Uint32)
        valid = cute.make_rmem_tensor(cute.make_layout(sets), Int32)  # a set's row flags as bits
        n_groups = n_tiles * self.R
        at = (raw, valid, ids, pend, cache, phys, s_ids, row, start, end)
        where = (c16, tok0, wg_tid, block_size, total_rows)
        for s in cutlass.range_constexpr(sets - 1):
            if s < n_groups:
                self._issue(*at, Int32(s), s, *where)
        # Group g is converted from set g % sets right after group g + sets - 1 is issued into the
        # set group g - 1 used: `sets - 1` groups stay in flight. The body covers a whole number of
        # register sets and of K/V tiles, so every set index and tile position in it is a constant.
        span = math.lcm(sets, self.R)
        cpw = self.id_window // self.N if self.id_window else 1
        for base in cutlass.range(0, n_groups, span, unroll=1):
            for s in cutlass.range_constexpr(span):
                g = base + s
                if g + sets - 1 < n_groups:
                    self._issue(*at, g + sets - 1, (s + sets - 1) % sets, *where)
                if cutlass.const_expr(self._early_window_step() and s % self.R == 0 and self.drop != "gather"):
                    # Group g + sets starts window k: its step runs now, after the issue of the
                    # last group of window k - 1 and before this tile store's EMPTY wait.
                    nxt = g + sets
                    if nxt % cpw == 0 and nxt < n_groups:
                        self._window_step(pend, phys, s_ids, row, start, end, nxt // cpw, wg_tid)
                if g < n_groups:
                    self._store(raw, valid, s_k, s_valid, g, s % sets, s % self.R, c16, tok0, bars)

