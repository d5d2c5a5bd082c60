"""Benchmark problems built directly on the GPU (a 256-sequence, 32k-context cache is gigabytes).

The cache uses FlashMLA's V3.2-no-RoPE layout, 528 bytes per token: 512 e4m3 latent bytes and
four fp32 scales (all equal to the one per-tensor scale). Our kernel reads the first 512 bytes of
the same buffer, so both kernels see identical data. Selections are what an indexer emits:
distinct ids of the sequence, then `-1` padding at the tail (a random 0..width/16 holes per row).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .checks import DecodeProblem
from .model_config import KV_LORA_RANK
from .testing import DecodeInputs

FLASHMLA_TOKEN_BYTES = 528  # 512 fp8 + 4 fp32 scales


@dataclass
class BenchProblem:
    inputs: DecodeInputs  # kv_cache is [num_blocks, page, 528] float8_e4m3fn
    phys: torch.Tensor  # [rows, width] int32 physical token ids (-1 holes), FlashMLA's indices
    valid_tokens: int  # selected tokens over all rows (for bytes and FLOPs)


def bench_geometry(batch: int, context: int, page: int):
    """(max_blocks, num_blocks) of the benchmark cache: every row owns a whole context of pages."""
    max_blocks = -(-context // page)
    return max_blocks, batch * max_blocks


def bench_decode_problem(batch: int, heads: int, width: int, *, context: int = 32768, page: int = 64) -> DecodeProblem:
    """What `check_decode_args` reads off a `make_bench_problem` call (no tensors: for precompiling)."""
    max_blocks, num_blocks = bench_geometry(batch, context, page)
    return DecodeProblem(
        num_rows=batch, num_heads=heads, width=width, num_blocks=num_blocks, block_size=page,
        token_bytes=FLASHMLA_TOKEN_BYTES, k_scale_on_device=False, v_scale_on_device=False, flat_cache=True,
        max_blocks=max_blocks,
    )


def make_bench_problem(
    batch: int,
    heads: int,
    width: int,
    *,
    context: int = 32768,
    page: int = 64,
    scale: float = 0.5,
    seed: int = 0,
    device: str = "cuda",
) -> BenchProblem:
    g = torch.Generator(device=device).manual_seed(seed)
    max_blocks, num_blocks = bench_geometry(batch, context, page)
    block_table = torch.randperm(num_blocks, generator=g, device=device).view(batch, max_blocks).to(torch.int32)
    seq_lens = torch.full((batch,), context, dtype=torch.int32, device=device)

    cache = torch.empty(num_blocks, page, FLASHMLA_TOKEN_BYTES, dtype=torch.uint8, device=device)
    step = max(1, (64 << 20) // (page * KV_LORA_RANK))  # ~64 MiB of latents per fill
    for b0 in range(0, num_blocks, step):
        b1 = min(num_blocks, b0 + step)
        lat = torch.randn(b1 - b0, page, KV_LORA_RANK, generator=g, device=device, dtype=torch.bfloat16)
        cache[b0:b1, :, :KV_LORA_RANK] = lat.to(torch.float8_e4m3fn).view(torch.uint8)
    scales = torch.full((num_blocks, page, 4), scale, dtype=torch.float32, device=device)
    cache[:, :, KV_LORA_RANK:] = scales.view(torch.uint8).view(num_blocks, page, 16)

    ids = torch.rand(batch, context, generator=g, device=device).argsort(dim=1)[:, :width].to(torch.int32)
    holes = torch.randint(0, width // 16 + 1, (batch, 1), generator=g, device=device)
    tail = torch.arange(width, device=device)[None, :] >= (width - holes)
    ids[tail] = -1
    page_of = torch.gather(block_table, 1, (ids.clamp(min=0) // page).to(torch.int64))
    phys = torch.where(ids >= 0, page_of * page + ids % page, -1).to(torch.int32)

    q = torch.randn(batch, heads, KV_LORA_RANK, generator=g, device=device, dtype=torch.bfloat16)
    inputs = DecodeInputs(
        q=q, kv_cache=cache.view(torch.float8_e4m3fn), block_table=block_table, seq_lens=seq_lens,
        indices=ids, k_scale=scale, v_scale=scale,
    )
    return BenchProblem(inputs=inputs, phys=phys, valid_tokens=int((~tail).sum().item()))
