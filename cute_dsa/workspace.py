"""Scratch tensors of one decode launch, carved from a caller's workspace or allocated.

A launch needs, besides `out` / `lse`: the resolved row ids (unless the ids are physical already
or resolved window by window in shared memory), the fp32 split-KV partials (O and LSE) when the
selection is split, and a throw-away LSE when it is not split and the caller wants none. An engine passes one preallocated uint8 `workspace` (sized once
with `cute_dsa.decode_workspace_bytes`) so a call allocates nothing; without it each part is a
`torch.empty` from the caching allocator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import torch

from .checks import _need, _tensor
from .model_config import KV_LORA_RANK

# Every part starts on a 256-byte boundary (the decode's partials need 16; 256 keeps each part on
# its own L2 sectors and matches the allocator's own alignment).
ALIGN = 256


@dataclass(frozen=True)
class Part:
    name: str
    shape: Tuple[int, ...]
    dtype: torch.dtype
    offset: int  # bytes from the workspace's start, a multiple of ALIGN

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n


def _round_up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def scratch_parts(variant, splits: int, rows: int, heads: int, width: int) -> Tuple[Part, ...]:
    """The scratch tensors a launch of `variant` (kernel_config.DecodeVariant) over `splits`
    splits needs, with their offsets in a workspace. Computed once per launch plan."""
    specs = []
    # Resolved rows, written by the resolve launch or by the decode's own slice resolve; physical
    # ids are read as given and the streamed resolve keeps its rows in shared memory.
    if not (variant.physical_ids or variant.stream_resolve):
        specs.append(("phys", (rows, width), torch.int32))
    if splits > 1:
        specs.append(("o_part", (rows, splits, heads, KV_LORA_RANK), torch.float32))
        specs.append(("lse_part", (rows, splits, heads), torch.float32))
    elif not variant.write_lse:
        specs.append(("lse", (rows, heads), torch.float32))  # the kernel's operand, never read
    parts, offset = [], 0
    for name, shape, dtype in specs:
        parts.append(Part(name, shape, dtype, offset))
        offset += _round_up(parts[-1].nbytes)
    return tuple(parts)


def workspace_bytes(parts: Tuple[Part, ...]) -> int:
    """Bytes a workspace needs to hold `parts` (0 when there are none)."""
    return parts[-1].offset + _round_up(parts[-1].nbytes) if parts else 0


def scratch(parts: Tuple[Part, ...], workspace: Optional[torch.Tensor], device: torch.device) -> Dict[str, torch.Tensor]:
    """The tensors of `parts`: views into `workspace` (validated) or, without one, fresh allocations."""
    if workspace is None:
        return {p.name: torch.empty(p.shape, dtype=p.dtype, device=device) for p in parts}
    _tensor("workspace", workspace, (torch.uint8,), 1)
    _need(workspace.is_contiguous(), lambda: f"workspace.stride()={tuple(workspace.stride())}: expected a contiguous tensor")
    _need(workspace.device == device, lambda: f"workspace.device={workspace.device}: expected {device} (same as q)")
    _need(workspace.data_ptr() % 16 == 0,
          lambda: f"workspace.data_ptr()={workspace.data_ptr():#x}: expected 16-byte alignment")
    need = workspace_bytes(parts)
    _need(workspace.numel() >= need, lambda: (
        f"workspace.numel()={workspace.numel()}: expected >= {need} bytes for this launch "
        f"({', '.join(f'{p.name} {tuple(p.shape)}' for p in parts)}; cute_dsa.decode_workspace_bytes gives it)"
    ))
    if not parts:
        return {}
    # One 4-byte view of the used bytes, then each part as a strided view of it (every part has
    # 4-byte elements): 1-2 µs a part on the host, like an allocation.
    words = {}
    views = {}
    for p in parts:
        base = words.get(p.dtype)
        if base is None:
            base = words[p.dtype] = workspace[:need].view(p.dtype)
        start = base.storage_offset() + p.offset // p.dtype.itemsize  # as_strided counts from the storage
        views[p.name] = base.as_strided(p.shape, _contiguous_strides(p.shape), start)
    return views


def _contiguous_strides(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    strides, n = [], 1
    for d in reversed(shape):
        strides.append(n)
        n *= d
    return tuple(reversed(strides))
