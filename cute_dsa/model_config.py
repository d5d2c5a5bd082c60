"""Model-level attention configuration (GLM-5.3 DSA over an absorbed MLA latent).

`validate()` refuses what the decode kernel cannot compute, with a message that names the field,
its value and what was expected. The kernel never silently adapts to an unsupported model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

KV_LORA_RANK = 512  # the kernel's tiling is built around one 512-wide latent per token


@dataclass(frozen=True)
class SparseMLAConfig:
    kv_lora_rank: int = KV_LORA_RANK
    qk_rope_head_dim: int = 0
    num_heads: int = 64
    num_kv_heads: int = 1
    index_topk: int = 2048
    index_kpool: int = 1
    softmax_scale: Optional[float] = None  # None: kv_lora_rank ** -0.5 (the seed kernel's choice)

    @property
    def scale(self) -> float:
        return self.softmax_scale if self.softmax_scale is not None else self.kv_lora_rank ** -0.5

    @property
    def selection_width(self) -> int:
        """Width of one selection row: top-k plus the pool tail (padded with -1 holes)."""
        return self.index_topk + self.index_kpool - 1

    def validate(self, block_size: Optional[int] = None) -> "SparseMLAConfig":
        if self.kv_lora_rank != KV_LORA_RANK:
            raise ValueError(f"kv_lora_rank={self.kv_lora_rank}: expected {KV_LORA_RANK} (the kernel tiling)")
        if self.qk_rope_head_dim != 0:
            raise ValueError(
                f"qk_rope_head_dim={self.qk_rope_head_dim}: expected 0 (NoPE decode; the latent is the whole token)"
            )
        if self.num_kv_heads != 1:
            raise ValueError(f"num_kv_heads={self.num_kv_heads}: expected 1 (one latent KV head shared by all heads)")
        if self.num_heads < 1:
            raise ValueError(f"num_heads={self.num_heads}: expected >= 1")
        if self.index_topk < 1:
            raise ValueError(f"index_topk={self.index_topk}: expected >= 1")
        if self.index_kpool < 1:
            raise ValueError(f"index_kpool={self.index_kpool}: expected >= 1")
        if block_size is not None and block_size % self.index_kpool != 0:
            raise ValueError(
                f"block_size={block_size}: expected a multiple of index_kpool={self.index_kpool} "
                "(a pool must not straddle a page)"
            )
        s = self.scale
        if not (isinstance(s, (int, float)) and math.isfinite(s) and s > 0):
            raise ValueError(f"softmax_scale={self.softmax_scale!r}: expected a finite float > 0")
        return self


GLM_5_3 = SparseMLAConfig(num_heads=64, index_topk=2048, index_kpool=1)
