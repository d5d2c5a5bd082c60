"""Argument checks for `dsa_decode`: shapes, dtypes, devices and strides only (never values,
so no device synchronisation). Every error names the argument, its value and what was expected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Union

import torch

from .model_config import KV_LORA_RANK

Scale = Union[float, int, torch.Tensor]
_ALIGN = 16  # bytes: every gathered row is copied in 16-byte pieces


@dataclass(frozen=True)
class DecodeProblem:
    """What the launch needs to know about one call, read off the tensors' metadata."""

    num_rows: int
    num_heads: int
    width: int
    num_blocks: int
    block_size: int
    token_bytes: int
    k_scale_on_device: bool
    v_scale_on_device: bool
    flat_cache: bool = False  # blocks back to back: the decode addresses rows without block math
    max_blocks: int = 0  # block_table.shape[1]: a row addresses at most max_blocks x block_size tokens (0: unknown)


def _need(cond: bool, msg: Callable[[], str]) -> None:
    # The message is built only on failure: formatting ~25 of them cost ~20 µs per call.
    if not cond:
        raise ValueError(msg())


def _tensor(name: str, t, dtypes, ndim: int) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        want = " or ".join(str(d) for d in dtypes)
        raise TypeError(f"{name}.dtype={t.dtype}: expected {want}")
    _need(t.dim() == ndim, lambda: f"{name}.shape={tuple(t.shape)}: expected {ndim} dimensions")
    return t


def _inner_contiguous(name: str, t: torch.Tensor) -> None:
    _need(t.shape[-1] <= 1 or t.stride(-1) == 1, lambda: f"{name}.stride()={t.stride()}: expected a unit last stride")


def _scale(name: str, s: Scale) -> bool:
    """True when the scale is a device tensor (read by the kernel, no host sync)."""
    if isinstance(s, torch.Tensor):
        _need(s.dtype == torch.float32, lambda: f"{name}.dtype={s.dtype}: expected torch.float32")
        _need(s.numel() == 1, lambda: f"{name}.shape={tuple(s.shape)}: expected a 1-element tensor")
        return True
    if isinstance(s, bool) or not isinstance(s, (float, int)) or not math.isfinite(s):
        raise TypeError(f"{name}={s!r}: expected a finite python float or a 1-element float32 CUDA tensor")
    return False


def squeeze_kv_head(kv_cache: torch.Tensor) -> torch.Tensor:
    """Accept [blocks, block_size, 1, bytes] as a view of [blocks, block_size, bytes]."""
    if isinstance(kv_cache, torch.Tensor) and kv_cache.dim() == 4:
        _need(
            kv_cache.shape[2] == 1,
            lambda: f"kv_cache.shape={tuple(kv_cache.shape)}: expected 1 KV head in dim 2, got {kv_cache.shape[2]} "
            "(MLA has a single latent head shared by all query heads)",
        )
        return kv_cache[:, :, 0]
    return kv_cache


def check_decode_args(
    q, kv_cache, block_table, seq_lens, indices, *, k_scale, v_scale, softmax_scale, index_kpool, out, lse
) -> DecodeProblem:
    _tensor("q", q, (torch.bfloat16,), 3)
    _tensor("kv_cache", kv_cache, (torch.float8_e4m3fn, torch.uint8), 3)
    _tensor("block_table", block_table, (torch.int32,), 2)
    _tensor("seq_lens", seq_lens, (torch.int32,), 1)
    _tensor("indices", indices, (torch.int32,), 2)
    num_rows, num_heads, dim = q.shape
    _need(dim == KV_LORA_RANK, lambda: f"q.shape[2] (kv_lora_rank)={dim}: expected {KV_LORA_RANK}")
    _need(num_rows > 0, lambda: f"q.shape[0] (num_rows)={num_rows}: expected >= 1 (degenerate launch)")
    _need(num_heads > 0, lambda: f"q.shape[1] (num_heads)={num_heads}: expected >= 1 (degenerate launch)")
    num_seqs = seq_lens.shape[0]
    _need(num_seqs > 0, lambda: f"seq_lens.shape[0] (num_seqs)={num_seqs}: expected >= 1 (degenerate launch)")
    _need(
        indices.shape[0] == num_rows,
        lambda: f"indices.shape[0]={indices.shape[0]}: expected q.shape[0]={num_rows} (one selection row per query row)",
    )
    _need(
        num_rows == num_seqs,
        lambda: f"q.shape[0] (num_rows)={num_rows}: expected seq_lens.shape[0] (num_seqs)={num_seqs} "
        "(one decode query row per sequence)",
    )
    _need(
        block_table.shape[0] == num_seqs,
        lambda: f"block_table.shape[0]={block_table.shape[0]}: expected seq_lens.shape[0]={num_seqs}",
    )
    _need(block_table.shape[1] > 0, lambda: f"block_table.shape={tuple(block_table.shape)}: expected >= 1 block per sequence")
    width = indices.shape[1]
    _need(width > 0, lambda: f"indices.shape[1] (width)={width}: expected >= 1")
    num_blocks, block_size, token_bytes = kv_cache.shape
    _need(num_blocks > 0, lambda: f"kv_cache.shape[0] (num_blocks)={num_blocks}: expected >= 1")
    _need(block_size > 0, lambda: f"kv_cache.shape[1] (block_size)={block_size}: expected >= 1")
    _need(
        token_bytes >= KV_LORA_RANK and token_bytes % _ALIGN == 0,
        lambda: f"kv_cache.shape[2] (token_stride_bytes)={token_bytes}: expected a multiple of {_ALIGN} that is >= {KV_LORA_RANK}",
    )
    if isinstance(index_kpool, bool) or not isinstance(index_kpool, int) or index_kpool < 1:
        raise ValueError(f"index_kpool={index_kpool!r}: expected an int >= 1")
    _need(
        block_size % index_kpool == 0,
        lambda: f"index_kpool={index_kpool}: expected a divisor of block_size={block_size} (a pool must not straddle a page)",
    )
    if softmax_scale is not None:
        if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, (float, int)):
            raise TypeError(f"softmax_scale={softmax_scale!r}: expected a python float or None")
        _need(math.isfinite(softmax_scale) and softmax_scale > 0, lambda: f"softmax_scale={softmax_scale}: expected a finite float > 0")

    for name, t in (("q", q), ("kv_cache", kv_cache), ("block_table", block_table), ("indices", indices), ("seq_lens", seq_lens)):
        _inner_contiguous(name, t)
    _need(
        kv_cache.stride(1) % _ALIGN == 0 and kv_cache.stride(0) % _ALIGN == 0,
        lambda: f"kv_cache.stride()={kv_cache.stride()}: expected block and token strides that are multiples of {_ALIGN} bytes",
    )
    _need(kv_cache.data_ptr() % _ALIGN == 0, lambda: f"kv_cache.data_ptr()={kv_cache.data_ptr():#x}: expected {_ALIGN}-byte alignment")
    _need(q.stride(1) % 8 == 0 and q.stride(0) % 8 == 0 and q.data_ptr() % 16 == 0,
          lambda: f"q.stride()={q.stride()}: expected row and head strides that are multiples of 8 elements (16 bytes)")

    if out is not None:
        _tensor("out", out, (torch.bfloat16,), 3)
        _need(tuple(out.shape) == (num_rows, num_heads, dim), lambda: f"out.shape={tuple(out.shape)}: expected {(num_rows, num_heads, dim)}")
        _inner_contiguous("out", out)
        _need(out.stride(1) % 8 == 0 and out.stride(0) % 8 == 0 and out.data_ptr() % 16 == 0,
              lambda: f"out.stride()={out.stride()}: expected row and head strides that are multiples of 8 elements")
    if lse is not None:
        _tensor("lse", lse, (torch.float32,), 2)
        _need(tuple(lse.shape) == (num_rows, num_heads), lambda: f"lse.shape={tuple(lse.shape)}: expected {(num_rows, num_heads)}")
        _inner_contiguous("lse", lse)
    k_dev = _scale("k_scale", k_scale)
    v_dev = _scale("v_scale", v_scale)
    # Placement last, so the structural checks above are testable with CPU tensors.
    device = q.device
    _need(q.is_cuda, lambda: f"q.device={device}: expected a CUDA tensor")
    for name, t in (("kv_cache", kv_cache), ("block_table", block_table), ("seq_lens", seq_lens), ("indices", indices)):
        _need(t.device == device, lambda: f"{name}.device={t.device}: expected {device} (same as q)")
    for name, t in (("out", out), ("lse", lse)) + ((("k_scale", k_scale),) if k_dev else ()) + ((("v_scale", v_scale),) if v_dev else ()):
        if t is not None:
            _need(t.device == device, lambda: f"{name}.device={t.device}: expected {device} (same as q)")
    return DecodeProblem(
        max_blocks=block_table.shape[1],
        num_rows=num_rows,
        num_heads=num_heads,
        width=width,
        num_blocks=num_blocks,
        block_size=block_size,
        token_bytes=token_bytes,
        k_scale_on_device=k_dev,
        v_scale_on_device=v_dev,
        flat_cache=kv_cache.stride(0) == block_size * kv_cache.stride(1),
    )
