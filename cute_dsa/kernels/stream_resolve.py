"""The decode's own resolve step, streamed window by window: no resolve launch and no up-front pass.

With long splits (large batch) the resolve kernel runs alone before the decode: its CTAs hold
the SMs the decode needs, so programmatic dependent launch overlaps nothing and every call pays
its whole duration (5-8 µs on the H200 at 128 rows). Resolving a whole split up front inside the
decode (`SplitResolve`) is slower still. Instead the producer resolves each id window (the
`id_window` positions whose rows it stages in shared memory anyway) one window ahead of its
gather, with the set semantics of `ResolveIndicesKernel` exactly: a position keeps its row iff
no lower position of the row holds the same valid id.

* The ids of window k+2 and the block-table entries of window k+1 are in flight while window k
  is gathered, so the extra dependent load costs no round trip of its own.
* A position is dropped if a lower position of its own window holds its id (a small hash table,
  two of them alternating, keyed by id and keeping the lowest position), or if its id's bit is
  already set in a bitmap of the row's tokens in shared memory (set by earlier windows in
  order, and first by the ids of the splits before this one).

Both are deterministic: the kept position of a duplicate set is always the lowest, so the
result is bitwise equal to the two-launch path. The bitmap covers STREAM_RESOLVE_TOKENS tokens
(max_blocks x block_size, the most a row can address); larger caches keep the resolve launch.

Status: correct, but on the H200 the decode runs ~1.4x longer with it than decode + resolve
launch (benchmarks/gpu-tests.md, eighth session), so it is opt-in (fuse_resolve="stream";
heuristics.STREAM_RESOLVE_AUTO). The producer now runs the window step before a wait it may
idle at: before it waits for a free ring slot in the consumer-converted configs (rather than
between the slot's release and its copies, LatentGather.run), and before the EMPTY wait of the
tile store preceding the window with register gathers (rather than inside the issue of the
window's first group, DirectLatentGather.run); not yet measured on a GPU.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint32

from ..kernel_config import STREAM_RESOLVE_TOKENS
from .resolve_indices import EMPTY, HASH_MUL, selects_row

BITMAP_WORDS = STREAM_RESOLVE_TOKENS // 32
NO_POSITION = 0x7FFFFFFF


def stream_words(window: int) -> int:
    """Int32 words of shared memory the step needs: two tables of 2W keys and 2W positions, the
    bitmap, and the next window's ids."""
    return 2 * 2 * 2 * window + BITMAP_WORDS + window


class StreamResolve:
    def __init__(self, threads: int, window: int, bar_id: int, scan_batch: int):
        assert window % threads == 0
        self.threads = threads  # the producer warpgroup
        self.window = window  # positions per id window
        self.per_thread = window // threads
        self.slots = 2 * window  # per table: at most half full
        self.log2_slots = self.slots.bit_length() - 1
        self.bar_id = bar_id  # a named barrier of the producer warpgroup alone
        self.scan_batch = scan_batch  # earlier positions' id loads in flight per thread

    def _views(self, s_stream):
        keys = cute.make_tensor(s_stream.iterator, cute.make_layout((self.slots, 2)))
        vals = cute.make_tensor(s_stream.iterator + 2 * self.slots, cute.make_layout((self.slots, 2)))
        bitmap = cute.make_tensor(s_stream.iterator + 4 * self.slots, cute.make_layout(BITMAP_WORDS))
        return keys, vals, bitmap

    def next_ids(self, s_stream):
        """The landed ids of the next window, parked in shared memory: a loaded value kept in a
        loop-carried register instead gets moved between registers at the loop's merge points,
        and the move waits for the load (ptxas, seen under Nsight Compute)."""
        return cute.make_tensor(s_stream.iterator + 4 * self.slots + BITMAP_WORDS, cute.make_layout(self.window))

    @cute.jit
    def park(self, s_stream, ids, tid):
        """The next window's ids (landed) into shared memory: this thread's own entries."""
        nxt = self.next_ids(s_stream)
        for j in cutlass.range_constexpr(self.per_thread):
            nxt[tid + self.threads * j] = ids[j]

    @cute.jit
    def parked(self, s_stream, dst, tid):
        nxt = self.next_ids(s_stream)
        for j in cutlass.range_constexpr(self.per_thread):
            dst[j] = nxt[tid + self.threads * j]

    @cute.jit
    def _clear_table(self, keys, vals, buf, tid):
        """Empty table `buf` (0 or 1): no keys, no positions."""
        for s in cutlass.range(tid, self.slots, self.threads, unroll=1):
            keys[s, buf] = Int32(EMPTY)
            vals[s, buf] = Int32(NO_POSITION)

    @cute.jit
    def _slot(self, token):
        h = Uint32(token) * Uint32(HASH_MUL)
        return Int32(h >> Uint32(32 - self.log2_slots))

    @cute.jit
    def load_ids(self, dst, indices, row, start, k, tid):
        """dst[j] = the id at window k's position start + k*W + tid + 128j (clamped in bounds;
        the window step masks positions past the split)."""
        width = indices.shape[1]
        for j in cutlass.range_constexpr(self.per_thread):
            dst[j] = indices[row, cutlass.min(start + k * self.window + tid + self.threads * j, width - 1)]

    @cute.jit
    def load_blocks(self, dst, tok, block_table, block_size, row):
        """dst[j] = the block-table entry of tok[j]'s page (clamped in bounds; validated later)."""
        max_blocks = block_table.shape[1]
        for j in cutlass.range_constexpr(self.per_thread):
            dst[j] = block_table[row, cutlass.min(cutlass.max(tok[j], 0) // block_size, max_blocks - 1)]

    @cute.jit
    def begin(self, res, row, start, tid):
        """Clear the bitmap and the first table, then set the bits of the ids at the positions
        before this split (every id there that can select a row). Returns the row's sequence length."""
        indices, seq_lens, block_table, block_size, num_blocks, s_stream = res
        keys, vals, bitmap = self._views(s_stream)
        seq_len = seq_lens[row]
        addressable = block_table.shape[1] * block_size  # the host checked <= STREAM_RESOLVE_TOKENS
        limit = cutlass.min(seq_len, addressable)
        for w in cutlass.range(tid, (addressable + 31) // 32, self.threads, unroll=1):
            bitmap[w] = Int32(0)
        self._clear_table(keys, vals, Int32(0), tid)
        cute.arch.barrier(barrier_id=self.bar_id, number_of_threads=self.threads)
        width = indices.shape[1]
        earlier = cute.make_rmem_tensor(cute.make_layout(self.scan_batch), Int32)
        for b0 in cutlass.range(0, start, self.threads * self.scan_batch, unroll=1):
            for k in cutlass.range_constexpr(self.scan_batch):
                earlier[k] = indices[row, cutlass.min(b0 + self.threads * k + tid, width - 1)]
            for k in cutlass.range_constexpr(self.scan_batch):
                t = earlier[k]
                if b0 + self.threads * k + tid < start and t >= 0 and t < limit:
                    cute.arch.atomic_or(bitmap.iterator + (t >> 5), Int32(1) << (t & 31), scope="cta")
        # The first window's inserts wait at its barrier, which also orders these bits before its checks.
        return seq_len

    @cute.jit
    def resolve_window(self, res, s_ids, slot, row, start, end, k, tok, blk, seq_len, tid):
        """Window k's rows into s_ids[:, slot] (-1: hole, invalid or a later duplicate), from its
        ids `tok` and block-table entries `blk` (this thread's positions tid + 128j). The caller
        synchronizes the producer before anyone reads them."""
        indices, seq_lens, block_table, block_size, num_blocks, s_stream = res
        keys, vals, bitmap = self._views(s_stream)
        max_blocks = block_table.shape[1]
        buf = k % 2
        mask = self.slots - 1
        # The other table served window k-1, whose checks ended before this window began: clear it for k+1.
        self._clear_table(keys, vals, 1 - buf, tid)
        ph = cute.make_rmem_tensor(cute.make_layout(self.per_thread), Int32)
        for j in cutlass.range_constexpr(self.per_thread):
            p = start + k * self.window + tid + self.threads * j
            t = tok[j]
            page = cutlass.max(t, 0) // block_size
            b = blk[j]
            r = Int32(EMPTY)
            if p < end and selects_row(t, seq_len, page, max_blocks, b, num_blocks):
                r = b * block_size + (t - page * block_size)
            ph[j] = r
            if r >= 0:
                s = self._slot(t)
                probing = True
                while probing:
                    old = cute.arch.atomic_cas(keys.iterator + (s + self.slots * buf), cmp=Int32(EMPTY), val=t, scope="cta")
                    if old == EMPTY or old == t:
                        cute.arch.atomic_min(vals.iterator + (s + self.slots * buf), p, scope="cta")
                        probing = False
                    else:
                        s = (s + 1) & mask
        cute.arch.barrier(barrier_id=self.bar_id, number_of_threads=self.threads)
        for j in cutlass.range_constexpr(self.per_thread):
            t = tok[j]
            r = ph[j]
            if r >= 0:
                p = start + k * self.window + tid + self.threads * j
                s = self._slot(t)
                while keys[s, buf] != t:
                    s = (s + 1) & mask
                if vals[s, buf] != p:
                    r = Int32(EMPTY)  # a lower position of this window holds the id
                else:
                    bit = Int32(1) << (t & 31)
                    old = cute.arch.atomic_or(bitmap.iterator + (t >> 5), bit, scope="cta")
                    if (old & bit) != 0:
                        r = Int32(EMPTY)  # an earlier window or split holds it
            s_ids[tid + self.threads * j, slot] = r
