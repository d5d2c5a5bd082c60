"""`resolve_indices`: logical token ids -> the physical ids `dsa_decode(physical_indices=True)` takes.

The same ResolveIndices launch `dsa_decode` makes for long splits, exposed so a caller can resolve
a selection once and decode it several times (layers that share one selection), or hand the
result to another kernel that takes FlashMLA's physical ids.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import compile as kc
from .checks import _inner_contiguous, _need, _tensor, squeeze_kv_head
from .heuristics import MAX_WIDTH, resolve_table_slots


def resolve_indices(
    kv_cache: torch.Tensor,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    indices: torch.Tensor,
    *,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """[rows, width] int32: `block * block_size + slot` of each selected token at the first
    position holding its id, -1 everywhere else (holes, ids outside [0, seq_lens[r]), pages past
    the block table or outside the cache, later duplicates). Distinct per row, so
    `dsa_decode(..., resolved, physical_indices=True)` gives the bits of `dsa_decode(..., indices)`.
    One launch on the current stream, no synchronisation; `out` (not `indices`) is written in place."""
    kv_cache = squeeze_kv_head(kv_cache)
    _tensor("kv_cache", kv_cache, (torch.float8_e4m3fn, torch.uint8), 3)
    _tensor("block_table", block_table, (torch.int32,), 2)
    _tensor("seq_lens", seq_lens, (torch.int32,), 1)
    _tensor("indices", indices, (torch.int32,), 2)
    rows, width = indices.shape
    num_blocks, block_size = kv_cache.shape[0], kv_cache.shape[1]
    _need(rows > 0 and width > 0, lambda: f"indices.shape={tuple(indices.shape)}: expected >= 1 row and >= 1 id per row")
    _need(width <= MAX_WIDTH, lambda: f"indices.shape[1] (width)={width}: expected <= {MAX_WIDTH}")
    _need(seq_lens.shape[0] == rows, lambda: f"seq_lens.shape[0]={seq_lens.shape[0]}: expected indices.shape[0]={rows}")
    _need(block_table.shape[0] == rows, lambda: f"block_table.shape[0]={block_table.shape[0]}: expected indices.shape[0]={rows}")
    _need(block_table.shape[1] > 0, lambda: f"block_table.shape={tuple(block_table.shape)}: expected >= 1 block per sequence")
    _need(num_blocks > 0 and block_size > 0, lambda: f"kv_cache.shape={tuple(kv_cache.shape)}: expected >= 1 block of >= 1 token")
    _need(num_blocks * block_size < 2**31,
          lambda: f"kv_cache.shape={tuple(kv_cache.shape)}: expected fewer than 2**31 token rows (int32 row ids)")
    for name, t in (("block_table", block_table), ("indices", indices)):
        _inner_contiguous(name, t)
    if out is None:
        out = torch.empty_like(indices, memory_format=torch.contiguous_format)
    else:
        _tensor("out", out, (torch.int32,), 2)
        _need(tuple(out.shape) == (rows, width), lambda: f"out.shape={tuple(out.shape)}: expected {(rows, width)}")
        _inner_contiguous("out", out)
        # Wide selections re-read the ids after the first rows are written.
        _need(out.data_ptr() != indices.data_ptr(), lambda: "out: expected a tensor other than indices (no in-place resolve)")
    device = indices.device
    _need(indices.is_cuda, lambda: f"indices.device={device}: expected a CUDA tensor")
    for name, t in (("kv_cache", kv_cache), ("block_table", block_table), ("seq_lens", seq_lens), ("out", out)):
        _need(t.device == device, lambda: f"{name}.device={t.device}: expected {device} (same as indices)")
    kc.resolve_kernel(resolve_table_slots(width))(indices, seq_lens, block_table, out, block_size, num_blocks)
    return out
