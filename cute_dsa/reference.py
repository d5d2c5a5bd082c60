"""Dense masked-attention oracle.

Written independently of the kernel's gather: for each row it expands the sequence's pages into
a dense [seq_len, 512] latent, scatters the selected ids into a boolean mask over those
positions and runs an ordinary masked softmax. Duplicates collapse because a mask bit is set
once; -1 holes, other negatives and ids >= seq_len never land in the mask; tokens whose page id
is outside [0, num_blocks) (or past the block table) are masked too.
"""

from __future__ import annotations

from typing import Optional, Tuple, Union

import torch

from .model_config import KV_LORA_RANK

Scale = Union[float, torch.Tensor]

# A dense mask of more keys than this per row is refused: it would take gigabytes.
DEFAULT_MAX_KEYS = 1 << 20


def _as_float(x: Scale) -> float:
    return float(x.reshape(-1)[0].item()) if isinstance(x, torch.Tensor) else float(x)


def dequantize_latent(kv_cache: torch.Tensor) -> torch.Tensor:
    """[..., token_bytes] fp8/uint8 cache -> [..., 512] float32 latent (first 512 bytes)."""
    raw = kv_cache[..., :KV_LORA_RANK]
    if raw.dtype == torch.uint8:
        raw = raw.contiguous().view(torch.float8_e4m3fn)
    return raw.to(torch.float32)


def masked_attention(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    indices: torch.Tensor,
    *,
    k_scale: Scale = 1.0,
    v_scale: Scale = 1.0,
    softmax_scale: Optional[float] = None,
    index_kpool: int = 1,
    dtype: torch.dtype = torch.float64,
    max_keys: int = DEFAULT_MAX_KEYS,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Reference decode. Returns (out [rows, H, 512], lse [rows, H]) in `dtype` (natural log).

    Accepts the same arguments as `cute_dsa.dsa_decode`, on any device. `index_kpool` does not
    change the function (the pools are already expanded into `indices`); it is accepted so the
    two calls are interchangeable.
    """
    del index_kpool
    if kv_cache.dim() == 4:
        kv_cache = kv_cache[:, :, 0]
    if softmax_scale is None:
        softmax_scale = q.shape[-1] ** -0.5
    num_rows, num_heads, dim = q.shape
    num_blocks, block_size = kv_cache.shape[0], kv_cache.shape[1]
    max_blocks = block_table.shape[1]
    ks, vs = _as_float(k_scale), _as_float(v_scale)
    seq_lens_h = seq_lens.to("cpu", torch.int64)
    lens = [max(0, min(int(seq_lens_h[r]), max_blocks * block_size)) for r in range(num_rows)]
    if lens and max(lens) > max_keys:
        raise ValueError(
            f"seq_lens: a row has {max(lens)} keys, more than max_keys={max_keys} for a dense mask; "
            "pass a larger max_keys or a shorter context"
        )
    out = torch.zeros(num_rows, num_heads, dim, dtype=dtype, device=q.device)
    lse = torch.full((num_rows, num_heads), float("-inf"), dtype=dtype, device=q.device)
    for r in range(num_rows):
        n = lens[r]
        if n == 0:
            continue
        pages = block_table[r, : (n + block_size - 1) // block_size].to(torch.int64)
        page_ok = (pages >= 0) & (pages < num_blocks)
        dense = dequantize_latent(kv_cache[pages.clamp(0, num_blocks - 1)])  # [pages, bs, 512]
        dense = dense.reshape(-1, dim)[:n].to(dtype)
        mask = torch.zeros(n, dtype=torch.bool, device=q.device)
        ids = indices[r].to(torch.int64)
        ids = ids[(ids >= 0) & (ids < n)]
        mask[ids] = True
        mask &= page_ok.repeat_interleave(block_size)[:n]
        if not bool(mask.any()):
            continue
        scores = (q[r].to(dtype) @ dense.T) * (ks * softmax_scale)  # [H, n]
        scores = scores.masked_fill(~mask, float("-inf"))
        row_lse = torch.logsumexp(scores, dim=-1)
        probs = torch.exp(scores - row_lse[:, None])
        out[r] = (probs @ dense) * vs
        lse[r] = row_lse
    return out, lse
