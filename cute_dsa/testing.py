"""Random decode problems for tests, the demo and the benchmark (host-side helpers only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from .model_config import KV_LORA_RANK


@dataclass
class DecodeInputs:
    q: torch.Tensor
    kv_cache: torch.Tensor  # [num_blocks, block_size, token_bytes] float8_e4m3fn
    block_table: torch.Tensor
    seq_lens: torch.Tensor
    indices: torch.Tensor
    k_scale: float
    v_scale: float

    def args(self):
        return (self.q, self.kv_cache, self.block_table, self.seq_lens, self.indices)


def random_fp8_cache(num_blocks: int, block_size: int, token_bytes: int, gen: torch.Generator, device="cpu"):
    """Latent values ~N(0,1) in e4m3; bytes past the latent are random garbage (never read)."""
    lat = torch.randn(num_blocks, block_size, KV_LORA_RANK, generator=gen).to(torch.float8_e4m3fn)
    raw = torch.randint(0, 256, (num_blocks, block_size, token_bytes), generator=gen, dtype=torch.uint8)
    raw[..., :KV_LORA_RANK] = lat.view(torch.uint8)
    return raw.view(torch.float8_e4m3fn).to(device)


def make_inputs(
    num_rows: int,
    num_heads: int,
    width: int,
    *,
    block_size: int = 64,
    token_bytes: int = 512,
    context: int = 4096,
    hole_frac: float = 0.1,
    dup_frac: float = 0.05,
    oob_frac: float = 0.02,
    bad_block_frac: float = 0.0,
    empty_rows: int = 0,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    seed: int = 0,
    device: str = "cpu",
    min_context: Optional[int] = None,
) -> DecodeInputs:
    """Sequences of random length up to `context`, pages scattered over a shared pool, selections
    of `width` ids with holes (-1), duplicates, ids >= seq_len and, optionally, bad block ids."""
    g = torch.Generator().manual_seed(seed)
    lo = min_context if min_context is not None else max(1, context // 2)
    seq_lens = torch.randint(lo, context + 1, (num_rows,), generator=g, dtype=torch.int32)
    max_blocks = (context + block_size - 1) // block_size
    num_blocks = max(num_rows * max_blocks // 2 + 1, max_blocks + 1)  # sequences share pages
    # Distinct pages within a sequence, shared between sequences, in no particular order.
    block_table = torch.stack(
        [torch.randperm(num_blocks, generator=g)[:max_blocks] for _ in range(num_rows)]
    ).to(torch.int32)
    if bad_block_frac > 0:
        bad = torch.rand(num_rows, max_blocks, generator=g) < bad_block_frac
        block_table[bad] = torch.where(torch.rand(int(bad.sum()), generator=g) < 0.5, -7, num_blocks + 3).to(torch.int32)
    indices = torch.empty(num_rows, width, dtype=torch.int32)
    for r in range(num_rows):
        n = int(seq_lens[r])
        ids = torch.randint(0, n, (width,), generator=g, dtype=torch.int32)
        u = torch.rand(width, generator=g)
        ids[u < dup_frac] = ids[torch.randint(0, width, (1,), generator=g)]
        ids[(u >= dup_frac) & (u < dup_frac + oob_frac)] = n + torch.randint(0, 1000, (1,), generator=g).to(torch.int32)
        ids[u > 1.0 - hole_frac] = -1
        indices[r] = ids
    for r in range(min(empty_rows, num_rows)):
        indices[num_rows - 1 - r] = -1
    q = torch.randn(num_rows, num_heads, KV_LORA_RANK, generator=g).to(torch.bfloat16)
    cache = random_fp8_cache(num_blocks, block_size, token_bytes, g)
    return DecodeInputs(
        q=q.to(device),
        kv_cache=cache.to(device),
        block_table=block_table.to(device),
        seq_lens=seq_lens.to(device),
        indices=indices.to(device),
        k_scale=k_scale,
        v_scale=v_scale,
    )


# The GPU suite's test_every_tunable_config runs each tunable config on these inputs at these split
# counts; benchmarks/precompile_tests.py compiles the same kernels ahead of a device call.
TUNABLE_CONFIG_SPLITS = (1, 3)


def tunable_config_inputs(cfg, device: str = "cuda") -> DecodeInputs:
    """Three rows of 40 heads and 2176 ids with holes, duplicates, bad blocks and an empty row."""
    return make_inputs(3, 40, 2176, hole_frac=0.2, dup_frac=0.1, bad_block_frac=0.05, empty_rows=1,
                       seed=cfg.chunk_tokens * 10 + cfg.stages, device=device, k_scale=0.6, v_scale=1.4)


def physical_ids(inp: DecodeInputs) -> torch.Tensor:
    """The cache rows (block * block_size + slot) of each row's selected set, at the position of
    each id's first occurrence, -1 elsewhere: the ids a FlashMLA-style caller passes with
    `physical_indices=True`, selecting exactly what `inp.indices` selects."""
    bt, lens, ids = inp.block_table.cpu().to(torch.int64), inp.seq_lens.cpu().to(torch.int64), inp.indices.cpu().to(torch.int64)
    num_blocks, block_size = inp.kv_cache.shape[0], inp.kv_cache.shape[1]
    page = ids.clamp(min=0) // block_size
    block = torch.gather(bt, 1, page.clamp(max=bt.shape[1] - 1))
    ok = (ids >= 0) & (ids < lens[:, None]) & (page < bt.shape[1]) & (block >= 0) & (block < num_blocks)
    phys = torch.where(ok, block * block_size + ids % block_size, -1)
    for r in range(ids.shape[0]):  # later duplicates -> -1
        seen = set()
        for j, v in enumerate(phys[r].tolist()):
            if v >= 0:
                if v in seen:
                    phys[r, j] = -1
                seen.add(v)
    return phys.to(torch.int32).to(inp.indices.device)


def as_flat_rows(inp: DecodeInputs, indices: torch.Tensor) -> DecodeInputs:
    """`inp` with `indices` read as cache rows: one sequence covering the whole cache per row (an
    identity block table), so the oracle's set semantics over logical ids become the physical ids'
    (ids outside [0, num_blocks * block_size) select nothing)."""
    num_blocks, block_size = inp.kv_cache.shape[0], inp.kv_cache.shape[1]
    rows, dev = inp.q.shape[0], inp.q.device
    table = torch.arange(num_blocks, dtype=torch.int32, device=dev).expand(rows, -1).contiguous()
    lens = torch.full((rows,), num_blocks * block_size, dtype=torch.int32, device=dev)
    return DecodeInputs(q=inp.q, kv_cache=inp.kv_cache, block_table=table, seq_lens=lens, indices=indices,
                        k_scale=inp.k_scale, v_scale=inp.v_scale)


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    ref = ref.to(torch.float64)
    den = ref.norm().item()
    num = (out.to(torch.float64) - ref).norm().item()
    return num / den if den > 0 else num
