"""`dsa_decode` as torch custom ops, so a `torch.compile`d model (an inference engine's) can call
it without a graph break: the ops are opaque to the compiler and their fake implementations give
the output shapes.

    torch.ops.cute_dsa.dsa_decode(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale,
                                  softmax_scale, index_kpool, physical_indices) -> (out, lse)
    torch.ops.cute_dsa.dsa_decode_out(..., out, lse, workspace) -> ()
        # writes preallocated out / lse; with a uint8 workspace (cute_dsa.decode_workspace_bytes)
        # the call allocates nothing, with None its scratch comes from the caching allocator

`k_scale` / `v_scale` are python floats or 1-element fp32 CUDA tensors (read on the device), as
in `dsa_decode`; `softmax_scale` < 0 means the default (512 ** -0.5). The launch is chosen
automatically (the tuned table), as for a plain `dsa_decode` call.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from .api import dsa_decode
from .model_config import KV_LORA_RANK

_SCALE = "(Tensor q, Tensor kv_cache, Tensor block_table, Tensor seq_lens, Tensor indices, " \
         "float k_scale, float v_scale, Tensor? k_scale_t, Tensor? v_scale_t, float softmax_scale, " \
         "int index_kpool, bool physical_indices"


def _scale(value: float, tensor: Optional[torch.Tensor]):
    return tensor if tensor is not None else value


def _decode(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale, k_scale_t, v_scale_t, softmax_scale,
            index_kpool, physical_indices, out=None, lse=None, workspace=None):
    return dsa_decode(
        q, kv_cache, block_table, seq_lens, indices, k_scale=_scale(k_scale, k_scale_t), v_scale=_scale(v_scale, v_scale_t),
        softmax_scale=None if softmax_scale < 0 else softmax_scale, index_kpool=index_kpool, out=out, lse=lse,
        physical_indices=physical_indices, workspace=workspace,
    )


@torch.library.custom_op("cute_dsa::dsa_decode", mutates_args=(), schema=_SCALE + ") -> (Tensor, Tensor)")
def dsa_decode_op(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale, k_scale_t, v_scale_t, softmax_scale,
                  index_kpool, physical_indices) -> Tuple[torch.Tensor, torch.Tensor]:
    return _decode(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale, k_scale_t, v_scale_t, softmax_scale,
                   index_kpool, physical_indices)


@dsa_decode_op.register_fake
def _(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale, k_scale_t, v_scale_t, softmax_scale,
      index_kpool, physical_indices):
    rows, heads = q.shape[0], q.shape[1]
    return q.new_empty(rows, heads, KV_LORA_RANK, dtype=torch.bfloat16), q.new_empty(rows, heads, dtype=torch.float32)


@torch.library.custom_op("cute_dsa::dsa_decode_out", mutates_args=("out", "lse", "workspace"),
                         schema=_SCALE + ", Tensor(a!) out, Tensor(b!) lse, Tensor(c!)? workspace) -> ()")
# `workspace` has no default on purpose: torch 2.11's ADInplaceOrView kernel for custom ops indexes
# the mutated arguments in the call's own argument tuple, so a mutable argument left to its
# default raised IndexError there (seen on the device; 2.13 fills the defaults first).
def dsa_decode_out_op(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale, k_scale_t, v_scale_t, softmax_scale,
                      index_kpool, physical_indices, out, lse, workspace) -> None:
    _decode(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale, k_scale_t, v_scale_t, softmax_scale,
            index_kpool, physical_indices, out=out, lse=lse, workspace=workspace)


@dsa_decode_out_op.register_fake
def _(q, kv_cache, block_table, seq_lens, indices, k_scale, v_scale, k_scale_t, v_scale_t, softmax_scale,
      index_kpool, physical_indices, out, lse, workspace) -> None:
    return None
