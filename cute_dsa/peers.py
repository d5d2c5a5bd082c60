"""The kernels we measure ourselves against, each as `setup(problem, softmax_scale) -> call`.

* FlashMLA's SM90 sparse FP8 decode (legacy kernels, V3.2-no-RoPE 528-byte tokens), when the
  `flash_mla` package is importable. It takes 64 or 128 heads only: smaller head counts are padded
  with zero queries, as an engine would have to.
* A plain PyTorch gather + matmul: dequantize the selected rows to BF16, two batched matmuls.
  It attends to the physical ids as given (the bench selections hold no duplicates).
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch

from .bench_inputs import BenchProblem
from .model_config import KV_LORA_RANK

Call = Callable[[], Tuple[torch.Tensor, torch.Tensor]]


def flashmla_available() -> Optional[str]:
    """None when FlashMLA can run here, else the reason it cannot."""
    try:
        import flash_mla  # noqa: F401  (import check only)
    except Exception as e:  # ImportError, or a loader error from a missing extension
        return f"flash_mla not importable ({type(e).__name__}: {e})"
    return None


def flashmla_padded_heads(heads: int) -> int:
    return 64 if heads <= 64 else 128


def setup_flashmla(p: BenchProblem, softmax_scale: float) -> Call:
    import flash_mla

    inp = p.inputs
    rows, heads, _ = inp.q.shape
    hp = flashmla_padded_heads(heads)
    if heads > 128:
        raise ValueError(f"FlashMLA takes at most 128 heads, got {heads}")
    q = torch.zeros(rows, 1, hp, KV_LORA_RANK, dtype=torch.bfloat16, device=inp.q.device)
    q[:, 0, :heads] = inp.q
    cache = inp.kv_cache.unsqueeze(2)  # [blocks, page, 1, 528]
    idx = p.phys.unsqueeze(1).contiguous()  # [rows, 1, width]
    meta, _ = flash_mla.get_mla_metadata()

    def call():
        o, lse = flash_mla.flash_mla_with_kvcache(
            q, cache, None, None, KV_LORA_RANK, meta, softmax_scale=softmax_scale,
            is_fp8_kvcache=True, indices=idx, use_legacy=True, kv_format="V32_NO_ROPE",
        )
        return o[:, 0, :heads], lse[:, :heads, 0]

    return call


def setup_torch(p: BenchProblem, softmax_scale: float) -> Call:
    inp = p.inputs
    flat = inp.kv_cache.view(-1, inp.kv_cache.shape[-1])[:, :KV_LORA_RANK]
    valid = p.phys >= 0
    rows_ix = p.phys.clamp(min=0).to(torch.int64)
    q = inp.q
    k_scale, v_scale = inp.k_scale, inp.v_scale

    def call():
        kv = flat[rows_ix].to(torch.bfloat16)  # [rows, width, 512]
        s = torch.bmm(q, kv.transpose(1, 2)).float() * (softmax_scale * k_scale)
        s = s.masked_fill(~valid[:, None, :], float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        p_ = torch.exp(s - lse[..., None]).to(torch.bfloat16)
        return torch.bmm(p_, kv) * v_scale, lse

    return call
