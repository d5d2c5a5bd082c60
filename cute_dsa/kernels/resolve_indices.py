"""Resolve a row's selected logical token ids into physical cache rows, once per id.

One CTA of 1024 threads per query row: the kernel is latency-bound (each thread's ids, then
their block-table entries, then the hash probes are dependent steps), so more threads per row
shorten each thread's chain and give the SM more warps to switch between.

Output `phys[r, j]` is `block * block_size + slot` for the first occurrence (lowest position j)
of each valid id, and -1 for holes, ids outside [0, seq_len), ids whose page lies past the block
table or whose block id is outside [0, num_blocks), and later duplicates. The result depends only
on the inputs (the representative of a duplicate set is its minimum position), so it is bitwise
deterministic, and the decode kernel can treat every non-negative entry as one member of the
selected set.

Duplicates are found with an open-addressing hash table in shared memory. Up to 8192 ids (16384
slots) each slot holds an id (claimed by atomicCAS, which also tells a probe whether the slot is
its id's) and, beside it, the lowest position holding that id (atomicMin). Each thread owns at most
8 positions and keeps their ids, rows and slots in registers from the global loads to the one
store per position: load ids, load their block-table entries, insert, barrier, read the slot's
lowest position, store. Wider selections keep one position per slot and compare ids in global
memory. The caller sizes the table: at least two slots per id (heuristics.resolve_table_slots).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint32
from cutlass.memory import SmemAllocator

EMPTY = -1
HASH_MUL = 0x9E3779B1  # Fibonacci hashing: spreads consecutive ids over the table


@cute.jit
def selects_row(token, seq_len, page, max_blocks, block, num_blocks):
    """Whether a logical id selects a cache row: inside the row's sequence, on a page the block
    table has, whose block is inside the cache (`page` = token // block_size, and `block` the table's
    entry for it, both read clamped so they are safe to compute before the check)."""
    return token >= 0 and token < seq_len and page < max_blocks and block >= 0 and block < num_blocks


# Up to this many slots (8192 ids) the table holds the ids themselves, beside their lowest positions
# (two words a slot), and each thread's positions stay in its registers.
TOKENS_IN_SMEM_MAX_SLOTS = 16384
RESOLVE_THREADS = 1024
NO_POSITION = 0x7FFFFFFF


class ResolveIndicesKernel:
    def __init__(self, table_slots: int, num_threads: int = RESOLVE_THREADS):
        assert table_slots & (table_slots - 1) == 0 and table_slots >= 64
        self.table_slots = table_slots
        self.log2_slots = table_slots.bit_length() - 1
        self.num_threads = num_threads
        self.tokens_in_smem = table_slots <= TOKENS_IN_SMEM_MAX_SLOTS
        # A table of S slots serves at most S / 2 ids: each thread's share, all in registers.
        self.per_thread = max(1, table_slots // 2 // num_threads)
        assert not self.tokens_in_smem or self.per_thread <= 8

    @cute.jit
    def __call__(
        self,
        indices: cute.Tensor,  # (rows, width) int32
        seq_lens: cute.Tensor,  # (rows,) int32
        block_table: cute.Tensor,  # (rows, max_blocks) int32
        phys: cute.Tensor,  # (rows, width) int32, written
        block_size: Int32,
        num_blocks: Int32,
        stream,
    ):
        # block_size as a multiply-shift divisor built on the host: a runtime 32-bit division is
        # a long dependent instruction sequence per id.
        pages = cute.fast_divmod_create_divisor_v2(block_size)
        self.kernel(indices, seq_lens, block_table, phys, pages, num_blocks).launch(
            grid=[indices.shape[0], 1, 1], block=[self.num_threads, 1, 1], stream=stream
        )

    @cute.jit
    def _slot(self, token: Int32) -> Int32:
        h = Uint32(token) * Uint32(HASH_MUL)
        return Int32(h >> Uint32(32 - self.log2_slots))

    @cute.jit
    def _insert(self, table, ids, token: Int32, j: Int32):
        """Claim `token`'s slot for position j, or lower the slot's position to j if it already
        holds `token`. `ids[p]` is the id at position p (shared or global memory)."""
        mask = self.table_slots - 1
        s = self._slot(token)
        probing = True
        while probing:
            old = cute.arch.atomic_cas(table.iterator + s, cmp=Int32(EMPTY), val=j, scope="cta")
            if old == EMPTY:
                probing = False
            elif ids[old] == token:
                cute.arch.atomic_min(table.iterator + s, j, scope="cta")
                probing = False
            else:
                s = (s + 1) & mask

    @cute.jit
    def _keep_first(self, table, ids, token: Int32, j: Int32, phys, row):
        """After every insert: position j keeps its row only if it is `token`'s lowest position."""
        mask = self.table_slots - 1
        s = self._slot(token)
        owner = table[s]
        while ids[owner] != token:
            s = (s + 1) & mask
            owner = table[s]
        if owner != j:
            phys[row, j] = Int32(EMPTY)

    @cute.kernel
    def kernel(
        self,
        indices: cute.Tensor,
        seq_lens: cute.Tensor,
        block_table: cute.Tensor,
        phys: cute.Tensor,
        pages: cute.FastDivmodDivisorV2,  # token -> (page, slot): division by block_size
        num_blocks: Int32,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        row, _, _ = cute.arch.block_idx()
        # The decode (launched as a programmatic dependent) may start its CTAs now: they stage Q
        # and wait for this grid (griddepcontrol.wait) before reading `phys`.
        cute.arch.griddepcontrol_launch_dependents()
        smem = SmemAllocator()
        if cutlass.const_expr(self.tokens_in_smem):
            self._resolve_in_smem(smem, indices, seq_lens, block_table, phys, pages, num_blocks, row, tidx)
        else:
            table = smem.allocate_tensor(Int32, cute.make_layout(self.table_slots), byte_alignment=16)
            for s in cutlass.range(tidx, self.table_slots, self.num_threads):
                table[s] = EMPTY
            self._resolve_global(indices, seq_lens, block_table, phys, pages, num_blocks, table, row, tidx)

    @cute.jit
    def _claim(self, keys, first, token: Int32, j: Int32) -> Int32:
        """`token`'s slot (claimed if it had none), its lowest position lowered to j."""
        mask = self.table_slots - 1
        s = self._slot(token)
        probing = True
        while probing:
            old = cute.arch.atomic_cas(keys.iterator + s, cmp=Int32(EMPTY), val=token, scope="cta")
            if old == EMPTY or old == token:
                probing = False
            else:
                s = (s + 1) & mask
        cute.arch.atomic_min(first.iterator + s, j, scope="cta")
        return s

    @cute.jit
    def _resolve_in_smem(self, smem, indices, seq_lens, block_table, phys, pages, num_blocks, row, tidx):
        """Position j = k * threads + tid (k < per_thread): its id and block-table entry are loaded
        together with the thread's others, its id claims a slot, and after one barrier the
        position keeps its row if it is the slot's lowest position; one store per position."""
        keys = smem.allocate_tensor(Int32, cute.make_layout(self.table_slots), byte_alignment=16)
        first = smem.allocate_tensor(Int32, cute.make_layout(self.table_slots), byte_alignment=16)
        n = self.per_thread
        width = indices.shape[1]
        max_blocks = block_table.shape[1]
        tok = cute.make_rmem_tensor(cute.make_layout(n), Int32)
        page = cute.make_rmem_tensor(cute.make_layout(n), Int32)
        off = cute.make_rmem_tensor(cute.make_layout(n), Int32)
        blk = cute.make_rmem_tensor(cute.make_layout(n), Int32)
        res = cute.make_rmem_tensor(cute.make_layout(n), Int32)
        slot = cute.make_rmem_tensor(cute.make_layout(n), Int32)
        for k in cutlass.range_constexpr(n):
            tok[k] = indices[row, cutlass.min(k * self.num_threads + tidx, width - 1)]
        seq_len = seq_lens[row]
        # The table is cleared while the ids are in flight.
        for s in cutlass.range(tidx, self.table_slots, self.num_threads):
            keys[s] = EMPTY
            first[s] = NO_POSITION
        for k in cutlass.range_constexpr(n):
            page[k], off[k] = divmod(cutlass.max(tok[k], 0), pages)
            blk[k] = block_table[row, cutlass.min(page[k], max_blocks - 1)]
        cute.arch.sync_threads()
        for k in cutlass.range_constexpr(n):
            j = k * self.num_threads + tidx
            token = tok[k]
            b = blk[k]
            res[k] = Int32(EMPTY)
            slot[k] = Int32(0)
            if j < width and selects_row(token, seq_len, page[k], max_blocks, b, num_blocks):
                res[k] = b * pages.divisor + off[k]
                slot[k] = self._claim(keys, first, token, j)
        cute.arch.sync_threads()
        for k in cutlass.range_constexpr(n):
            j = k * self.num_threads + tidx
            if j < width:
                kept = Int32(EMPTY)
                if res[k] >= 0:
                    if first[slot[k]] == j:
                        kept = res[k]
                phys[row, j] = kept

    @cute.jit
    def _resolve_global(self, indices, seq_lens, block_table, phys, pages, num_blocks, table, row, tidx):
        """Wide selections (more ids than fit in shared memory next to the table): the duplicate
        search compares ids in global memory."""
        cute.arch.sync_threads()
        width = indices.shape[1]
        seq_len = seq_lens[row]
        max_blocks = block_table.shape[1]
        ids = indices[row, None]  # the id at each position, compared during probing
        # Pass 1: validate, translate and insert every valid id.
        for j in cutlass.range(tidx, width, self.num_threads):
            token = indices[row, j]
            res = Int32(EMPTY)
            if token >= 0 and token < seq_len:
                page, slot = divmod(token, pages)
                if page < max_blocks:
                    blk = block_table[row, page]
                    if blk >= 0 and blk < num_blocks:
                        res = blk * pages.divisor + slot
            phys[row, j] = res
            if res >= 0:
                self._insert(table, ids, token, j)
        cute.arch.sync_threads()
        # Pass 2: keep only the representative (lowest position) of each id.
        for j in cutlass.range(tidx, width, self.num_threads):
            if phys[row, j] >= 0:
                self._keep_first(table, ids, indices[row, j], j, phys, row)
