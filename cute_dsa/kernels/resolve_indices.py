"""Resolve a row's selected logical token ids into physical cache rows, once per id.

One CTA per query row. Output `phys[r, j]` is `block * block_size + slot` for the first
occurrence (lowest position j) of each valid id, and -1 for holes, ids outside [0, seq_len),
ids whose page lies past the block table or whose block id is outside [0, num_blocks), and
later duplicates. The result depends only on the inputs (the representative of a duplicate set
is its minimum position), so it is bitwise deterministic, and the decode kernel can treat every
non-negative entry as one member of the selected set.

Duplicates are found with an open-addressing hash table in shared memory keyed by the id; each
slot stores the lowest position holding that id (atomicCAS to claim, atomicMin to lower).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint32
from cutlass.memory import SmemAllocator

EMPTY = -1
_HASH_MUL = 0x9E3779B1  # Fibonacci hashing: spreads consecutive ids over the table


class ResolveIndicesKernel:
    def __init__(self, table_slots: int, num_threads: int = 512):
        assert table_slots & (table_slots - 1) == 0 and table_slots >= 64
        self.table_slots = table_slots
        self.log2_slots = table_slots.bit_length() - 1
        self.num_threads = num_threads

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
        self.kernel(indices, seq_lens, block_table, phys, block_size, num_blocks).launch(
            grid=[indices.shape[0], 1, 1], block=[self.num_threads, 1, 1], stream=stream
        )

    @cute.jit
    def _slot(self, token: Int32) -> Int32:
        h = Uint32(token) * Uint32(_HASH_MUL)
        return Int32(h >> Uint32(32 - self.log2_slots))

    @cute.kernel
    def kernel(
        self,
        indices: cute.Tensor,
        seq_lens: cute.Tensor,
        block_table: cute.Tensor,
        phys: cute.Tensor,
        block_size: Int32,
        num_blocks: Int32,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        row, _, _ = cute.arch.block_idx()
        smem = SmemAllocator()
        table = smem.allocate_tensor(Int32, cute.make_layout(self.table_slots), byte_alignment=16)
        mask = self.table_slots - 1
        for s in cutlass.range(tidx, self.table_slots, self.num_threads):
            table[s] = EMPTY
        cute.arch.sync_threads()

        width = indices.shape[1]
        seq_len = seq_lens[row]
        max_blocks = block_table.shape[1]
        # Pass 1: validate, translate and insert every valid id.
        for j in cutlass.range(tidx, width, self.num_threads):
            token = indices[row, j]
            res = Int32(EMPTY)
            if token >= 0 and token < seq_len:
                page = token // block_size
                if page < max_blocks:
                    blk = block_table[row, page]
                    if blk >= 0 and blk < num_blocks:
                        res = blk * block_size + (token - page * block_size)
            phys[row, j] = res
            if res >= 0:
                s = self._slot(token)
                probing = True
                while probing:
                    old = cute.arch.atomic_cas(table.iterator + s, cmp=Int32(EMPTY), val=j, scope="cta")
                    if old == EMPTY:
                        probing = False
                    elif indices[row, old] == token:
                        cute.arch.atomic_min(table.iterator + s, j, scope="cta")
                        probing = False
                    else:
                        s = (s + 1) & mask
        cute.arch.sync_threads()
        # Pass 2: keep only the representative (lowest position) of each id.
        for j in cutlass.range(tidx, width, self.num_threads):
            if phys[row, j] >= 0:
                token = indices[row, j]
                s = self._slot(token)
                owner = table[s]
                while indices[row, owner] != token:
                    s = (s + 1) & mask
                    owner = table[s]
                if owner != j:
                    phys[row, j] = Int32(EMPTY)
