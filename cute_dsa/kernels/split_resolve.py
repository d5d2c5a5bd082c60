"""The decode's own resolve step, for short splits: no separate resolve launch on the critical path.

At small batch every CTA covers a short slice [start, end) of its row's selection, and the
resolve kernel (one CTA per row, then the grid boundary) costs as much as the decode. Instead
the producer warpgroup resolves its own slice before it gathers: it turns the ids into physical
rows and writes them into `phys` (scratch the gather then reads), with the set semantics of
`ResolveIndicesKernel` exactly: a position keeps its row iff it is the first (lowest) position
of the row holding that id.

The slice's valid ids go into an open-addressing table in shared memory that keeps the lowest
slice position per id; then every id at a position before `start` (the earlier splits') is
looked up in it, and a hit marks the id as owned by an earlier position. The table (the least
power of two of at least 64 and twice the slice's positions) and the slice's ids live in shared
memory the producer owns until its first hand-over (the K/V tiles or the raw ring), so the step
costs no shared memory of its own.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint32

from ..kernel_config import RESOLVE_BYTES_PER_POSITION
from .resolve_indices import EMPTY, HASH_MUL, selects_row

EARLIER = 1 << 30  # set in a table entry whose id also occurs before the slice
POSITION = EARLIER - 1
MIN_LOG2_SLOTS = 6


def scratch_bytes(max_slice: int) -> int:
    """Shared memory the step borrows for slices of up to `max_slice` positions: the table and
    the slice's ids."""
    return RESOLVE_BYTES_PER_POSITION * max_slice


class SplitResolve:
    def __init__(self, threads: int, batch: int, scan_batch: int, bar_id: int, max_slice: int):
        self.threads = threads  # the producer warpgroup
        self.batch = batch  # the slice's ids per thread whose loads (and block-table loads) are issued together
        self.scan_batch = scan_batch  # the same for the earlier positions' ids (no block-table loads)
        self.bar_id = bar_id  # a named barrier of the producer warpgroup alone
        self.max_slice = max_slice  # the launch plan keeps splits at most this long
        assert max_slice & (max_slice - 1) == 0 and max_slice < EARLIER

    @cute.jit
    def _slot(self, token, log2_slots):
        """Fibonacci hashing, as ResolveIndicesKernel, into 2^log2_slots slots (a runtime size)."""
        h = Uint32(token) * Uint32(HASH_MUL)
        return Int32(h >> Uint32(32 - log2_slots))

    @cute.jit
    def prefetch(self, res, row, start, tid):
        """The slice's first batch of ids, loads issued: the caller stages Q while they are in flight."""
        indices = res[0]
        tok = cute.make_rmem_tensor(cute.make_layout(self.batch), Int32)
        self._load_ids(tok, indices, row, start + tid)
        return tok

    @cute.jit
    def _load_ids(self, tok, indices, row, pos0):
        """tok[k] = indices[row, pos0 + threads * k], clamped in bounds (so the loads issue back to back)."""
        width = indices.shape[1]
        for k in cutlass.range_constexpr(self.batch):
            tok[k] = indices[row, cutlass.min(pos0 + self.threads * k, width - 1)]

    @cute.jit
    def run(self, res, phys, scratch, row, start, end, tid, tok):
        """phys[row, start:end] = the resolved rows of the slice. `res` = (indices, seq_lens,
        block_table, block_size, num_blocks); `scratch`: a shared-memory pointer, scratch_bytes();
        `tok`: prefetch()'s ids."""
        indices, seq_lens, block_table, block_size, num_blocks = res[:5]
        n = end - start
        log2_slots = Int32(MIN_LOG2_SLOTS)
        while (Int32(1) << log2_slots) < 2 * n:
            log2_slots = log2_slots + 1
        slots = Int32(1) << log2_slots
        base = cute.recast_ptr(scratch, dtype=Int32)
        table = cute.make_tensor(base, cute.make_layout(2 * self.max_slice))  # its first `slots` entries
        own = cute.make_tensor(base + 2 * self.max_slice, cute.make_layout(self.max_slice))  # own[j]: the id at start + j if valid, else -1
        for s in cutlass.range(tid, slots, self.threads, unroll=1):
            table[s] = EMPTY
        width = indices.shape[1]
        seq_len = seq_lens[row]
        max_blocks = block_table.shape[1]
        hashing = (log2_slots, slots - 1)
        step = self.threads * self.batch
        blk = cute.make_rmem_tensor(cute.make_layout(self.batch), Int32)
        # 1. Translate: the ids first (the first batch prefetched), then their block-table entries,
        # each batch in flight at once.
        for b0 in cutlass.range(0, n, step, unroll=1):
            if b0 > 0:
                self._load_ids(tok, indices, row, start + b0 + tid)
            for k in cutlass.range_constexpr(self.batch):
                blk[k] = block_table[row, cutlass.min(cutlass.max(tok[k], 0) // block_size, max_blocks - 1)]
            for k in cutlass.range_constexpr(self.batch):
                j = b0 + self.threads * k + tid
                token = tok[k]
                page = cutlass.max(token, 0) // block_size
                b = blk[k]
                ph = Int32(EMPTY)
                if selects_row(token, seq_len, page, max_blocks, b, num_blocks):
                    ph = b * block_size + (token - page * block_size)
                if j < n:
                    phys[row, start + j] = ph
                    own[j] = token if ph >= 0 else Int32(EMPTY)
        cute.arch.barrier(barrier_id=self.bar_id, number_of_threads=self.threads)
        # 2. The slice's ids into the table, each slot keeping its id's lowest slice position.
        for j in cutlass.range(tid, n, self.threads, unroll=1):
            token = own[j]
            if token >= 0:
                self._insert(table, own, token, j, hashing)
        cute.arch.barrier(barrier_id=self.bar_id, number_of_threads=self.threads)
        # 3. Ids before the slice: the same id there owns it. (An id valid here is valid there:
        # validity depends only on the id and the row.)
        earlier = cute.make_rmem_tensor(cute.make_layout(self.scan_batch), Int32)
        for b0 in cutlass.range(0, start, self.threads * self.scan_batch, unroll=1):
            for k in cutlass.range_constexpr(self.scan_batch):
                earlier[k] = indices[row, cutlass.min(b0 + self.threads * k + tid, width - 1)]
            for k in cutlass.range_constexpr(self.scan_batch):
                if b0 + self.threads * k + tid < start and earlier[k] >= 0:
                    self._mark_earlier(table, own, earlier[k], hashing)
        cute.arch.barrier(barrier_id=self.bar_id, number_of_threads=self.threads)
        # 4. Keep a position only if it is its id's first.
        for j in cutlass.range(tid, n, self.threads, unroll=1):
            token = own[j]
            if token >= 0:
                s = self._slot(token, hashing[0])
                e = table[s]
                while own[e & POSITION] != token:
                    s = (s + 1) & hashing[1]
                    e = table[s]
                if e != j:  # a lower slice position, or EARLIER set
                    phys[row, start + j] = Int32(EMPTY)
        # The other producer threads read these rows next (global memory, ordered by the barrier).
        cute.arch.barrier(barrier_id=self.bar_id, number_of_threads=self.threads)

    @cute.jit
    def _insert(self, table, own, token, j, hashing):
        log2_slots, mask = hashing
        s = self._slot(token, log2_slots)
        probing = True
        while probing:
            old = cute.arch.atomic_cas(table.iterator + s, cmp=Int32(EMPTY), val=j, scope="cta")
            if old == EMPTY:
                probing = False
            elif own[old] == token:
                cute.arch.atomic_min(table.iterator + s, j, scope="cta")
                probing = False
            else:
                s = (s + 1) & mask

    @cute.jit
    def _mark_earlier(self, table, own, token, hashing):
        """Set EARLIER on `token`'s entry if the slice holds it. Threads marking the same entry
        write the same value, and no entry changes position any more (after the inserts)."""
        log2_slots, mask = hashing
        s = self._slot(token, log2_slots)
        e = table[s]
        while e != EMPTY:
            if own[e & POSITION] == token:
                table[s] = e | EARLIER
                e = Int32(EMPTY)
            else:
                s = (s + 1) & mask
                e = table[s]
