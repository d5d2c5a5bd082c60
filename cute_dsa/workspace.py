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

    @property
    def nbytes(self) -> int:
        n = torch.empty((), dtype=self.dtype).element_size()
        for d in self.shape:
            n *= d
        return n


def scratch_parts(plan, rows: int, heads: int, width: int, write_lse: bool) -> Tuple[Part, ...]:
    """The scratch tensors `plan` launches with (see api.LaunchPlan), in carving order."""
    parts = []
    # Resolved rows, written by the resolve launch or by the decode's own slice resolve; physical
    # ids are read as given and the streamed resolve keeps its rows in shared memory.
    if not (plan.variant.physical_ids or plan.variant.stream_resolve):
        parts.append(Part("phys", (rows, width), torch.int32))
    if plan.splits > 1:
        parts.append(Part("o_part", (rows, plan.splits, heads, KV_LORA_RANK), torch.float32))
        parts.append(Part("lse_part", (rows, plan.splits, heads), torch.float32))
    elif not write_lse:
        parts.append(Part("lse", (rows, heads), torch.float32))  # the kernel's operand, never read
    return tuple(parts)


def _round_up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def workspace_bytes(parts: Tuple[Part, ...]) -> int:
    """Bytes a workspace needs to hold `parts` (each on an ALIGN boundary; 0 when there are none)."""
    return sum(_round_up(p.nbytes) for p in parts)


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
    views, offset = {}, 0
    for p in parts:
        views[p.name] = workspace[offset: offset + p.nbytes].view(p.dtype).view(p.shape)
        offset += _round_up(p.nbytes)
    return views
