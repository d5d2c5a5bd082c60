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
_Q_DTYPES = (torch.bfloat16,)
_CACHE_DTYPES = (torch.float8_e4m3fn, torch.uint8)
_ID_DTYPES = (torch.int32,)
_LSE_DTYPES = (torch.float32,)


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
    if t.dim() != ndim:
        raise ValueError(f"{name}.shape={tuple(t.shape)}: expected {ndim} dimensions")
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
    # Runs on every call: each tensor's shape and strides are read once, and each message is
    # formatted only when its check fails (the host time of a call is part of an eager decode step).
    _tensor("q", q, _Q_DTYPES, 3)
    _tensor("kv_cache", kv_cache, _CACHE_DTYPES, 3)
    _tensor("block_table", block_table, _ID_DTYPES, 2)
    _tensor("seq_lens", seq_lens, _ID_DTYPES, 1)
    _tensor("indices", indices, _ID_DTYPES, 2)
    num_rows, num_heads, dim = q_shape = q.shape
    if dim != KV_LORA_RANK:
        raise ValueError(f"q.shape[2] (kv_lora_rank)={dim}: expected {KV_LORA_RANK}")
    if num_rows <= 0:
        raise ValueError(f"q.shape[0] (num_rows)={num_rows}: expected >= 1 (degenerate launch)")
    if num_heads <= 0:
        raise ValueError(f"q.shape[1] (num_heads)={num_heads}: expected >= 1 (degenerate launch)")
    (num_seqs,) = seq_lens.shape
    if num_seqs <= 0:
        raise ValueError(f"seq_lens.shape[0] (num_seqs)={num_seqs}: expected >= 1 (degenerate launch)")
    idx_rows, width = indices.shape
    if idx_rows != num_rows:
        raise ValueError(
            f"indices.shape[0]={idx_rows}: expected q.shape[0]={num_rows} (one selection row per query row)"
        )
    if num_rows != num_seqs:
        raise ValueError(
            f"q.shape[0] (num_rows)={num_rows}: expected seq_lens.shape[0] (num_seqs)={num_seqs} "
            "(one decode query row per sequence)"
        )
    bt_rows, max_blocks = bt_shape = block_table.shape
    if bt_rows != num_seqs:
        raise ValueError(f"block_table.shape[0]={bt_rows}: expected seq_lens.shape[0]={num_seqs}")
    if max_blocks <= 0:
        raise ValueError(f"block_table.shape={tuple(bt_shape)}: expected >= 1 block per sequence")
    if width <= 0:
        raise ValueError(f"indices.shape[1] (width)={width}: expected >= 1")
    num_blocks, block_size, token_bytes = kv_cache.shape
    if num_blocks <= 0:
        raise ValueError(f"kv_cache.shape[0] (num_blocks)={num_blocks}: expected >= 1")
    if block_size <= 0:
        raise ValueError(f"kv_cache.shape[1] (block_size)={block_size}: expected >= 1")
    if token_bytes < KV_LORA_RANK or token_bytes % _ALIGN:
        raise ValueError(
            f"kv_cache.shape[2] (token_stride_bytes)={token_bytes}: expected a multiple of {_ALIGN} that is >= {KV_LORA_RANK}"
        )
    if isinstance(index_kpool, bool) or not isinstance(index_kpool, int) or index_kpool < 1:
        raise ValueError(f"index_kpool={index_kpool!r}: expected an int >= 1")
    if block_size % index_kpool:
        raise ValueError(
            f"index_kpool={index_kpool}: expected a divisor of block_size={block_size} (a pool must not straddle a page)"
        )
    if softmax_scale is not None:
        if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, (float, int)):
            raise TypeError(f"softmax_scale={softmax_scale!r}: expected a python float or None")
        if not (math.isfinite(softmax_scale) and softmax_scale > 0):
            raise ValueError(f"softmax_scale={softmax_scale}: expected a finite float > 0")

    q_st, kv_st = q.stride(), kv_cache.stride()
    for name, t, last, step in (
        ("q", q, dim, q_st[2]), ("kv_cache", kv_cache, token_bytes, kv_st[2]),
        ("block_table", block_table, max_blocks, block_table.stride(1)), ("indices", indices, width, indices.stride(1)),
        ("seq_lens", seq_lens, num_seqs, seq_lens.stride(0)),
    ):
        if last > 1 and step != 1:
            _inner_contiguous(name, t)  # raises: the one place that words this error
    if kv_st[1] % _ALIGN or kv_st[0] % _ALIGN:
        raise ValueError(
            f"kv_cache.stride()={kv_st}: expected block and token strides that are multiples of {_ALIGN} bytes"
        )
    if kv_cache.data_ptr() % _ALIGN:
        raise ValueError(f"kv_cache.data_ptr()={kv_cache.data_ptr():#x}: expected {_ALIGN}-byte alignment")
    if q_st[1] % 8 or q_st[0] % 8 or q.data_ptr() % 16:
        raise ValueError(f"q.stride()={q_st}: expected row and head strides that are multiples of 8 elements (16 bytes)")

    if out is not None:
        _tensor("out", out, _Q_DTYPES, 3)
        if out.shape != q_shape:
            raise ValueError(f"out.shape={tuple(out.shape)}: expected {(num_rows, num_heads, dim)}")
        _inner_contiguous("out", out)
        o_st = out.stride()
        if o_st[1] % 8 or o_st[0] % 8 or out.data_ptr() % 16:
            raise ValueError(f"out.stride()={o_st}: expected row and head strides that are multiples of 8 elements")
    if lse is not None:
        _tensor("lse", lse, _LSE_DTYPES, 2)
        if lse.shape != q_shape[:2]:
            raise ValueError(f"lse.shape={tuple(lse.shape)}: expected {(num_rows, num_heads)}")
        _inner_contiguous("lse", lse)
    k_dev = _scale("k_scale", k_scale)
    v_dev = _scale("v_scale", v_scale)
    # Placement last, so the structural checks above are testable with CPU tensors.
    device = q.device
    if not q.is_cuda:
        raise ValueError(f"q.device={device}: expected a CUDA tensor")
    for name, t in (("kv_cache", kv_cache), ("block_table", block_table), ("seq_lens", seq_lens), ("indices", indices),
                    ("out", out), ("lse", lse), ("k_scale", k_scale if k_dev else None),
                    ("v_scale", v_scale if v_dev else None)):
        if t is not None and t.device != device:
            raise ValueError(f"{name}.device={t.device}: expected {device} (same as q)")
    return DecodeProblem(
        max_blocks=max_blocks,
        num_rows=num_rows,
        num_heads=num_heads,
        width=width,
        num_blocks=num_blocks,
        block_size=block_size,
        token_bytes=token_bytes,
        k_scale_on_device=k_dev,
        v_scale_on_device=v_dev,
        flat_cache=kv_st[0] == block_size * kv_st[1],
    )
