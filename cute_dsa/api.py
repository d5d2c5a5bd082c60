"""`dsa_decode`: the thin torch adapter. Validation, config choice, launch; nothing else.

Launches (all on torch's current CUDA stream, no host synchronisation, CUDA-graph capturable):
1. ResolveIndices: logical ids -> physical cache rows, duplicates and invalid ids -> -1 (not
   launched when the splits are short: each decode CTA then resolves its own slice, nor when the
   caller passes physical ids, `physical_indices=True`);
2. SparseDecode: the tensor-core decode, writing the output or split-KV partials;
3. CombineSplits (only when split): partials -> output and LSE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple, Union

import torch

from . import compile as kc
from .checks import check_decode_args, squeeze_kv_head
from .heuristics import FUSED_RESOLVE_MAX_SPLIT, SLICE_RESOLVE_AUTO, STREAM_RESOLVE_AUTO, MAX_WIDTH, choose_splits, resolve_table_slots, split_length
from .kernel_config import STREAM_RESOLVE_TOKENS, DecodeKernelConfig, DecodeVariant
from .model_config import KV_LORA_RANK
from .workspace import Part, scratch, scratch_parts, workspace_bytes
from .config_select import device_info, select_for_gpu

Scale = Union[float, torch.Tensor]


def _check_index_values(kv_cache, block_table, seq_lens, indices, physical: bool = False) -> None:
    """Debug-only value checks (synchronises with the device)."""
    num_blocks, block_size = kv_cache.shape[0], kv_cache.shape[1]
    ids = indices.to(torch.int64)
    if bool((ids < -1).any()):
        raise ValueError(f"indices: {int((ids < -1).sum())} entries below -1 (holes must be -1)")
    if physical:
        _check_physical_ids(ids, num_blocks * block_size)
        return
    lens = seq_lens.to(torch.int64)[:, None]
    too_big = (ids >= lens) & (ids >= 0)
    if bool(too_big.any()):
        r = int(too_big.nonzero()[0, 0])
        raise ValueError(f"indices[{r}]: ids >= seq_lens[{r}]={int(lens[r, 0])} (they would select nothing)")
    if bool((seq_lens.to(torch.int64) > block_table.shape[1] * block_size).any()):
        raise ValueError(f"seq_lens: a length exceeds block_table.shape[1] * block_size = {block_table.shape[1] * block_size}")
    sel = ids.clamp(min=0) // block_size
    blocks = torch.gather(block_table.to(torch.int64), 1, sel.clamp(max=block_table.shape[1] - 1))
    bad = (ids >= 0) & ((blocks < 0) | (blocks >= num_blocks))
    if bool(bad.any()):
        raise ValueError(f"block_table: {int(bad.sum())} selected tokens map to block ids outside [0, {num_blocks})")


def _check_physical_ids(ids: torch.Tensor, total_rows: int) -> None:
    """Physical ids: inside the cache, and distinct within a row (the decode does not collapse them)."""
    if bool((ids >= total_rows).any()):
        r = int((ids >= total_rows).any(dim=1).nonzero()[0, 0])
        raise ValueError(f"indices[{r}]: physical ids >= num_blocks * block_size = {total_rows} (they would select nothing)")
    srt = ids.sort(dim=1).values
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
    if bool(dup.any()):
        r = int(dup.any(dim=1).nonzero()[0, 0])
        raise ValueError(f"indices[{r}]: a physical id repeats (physical_indices=True counts each occurrence; pass distinct ids)")


@dataclass(frozen=True)
class LaunchPlan:
    """Everything a call decides from metadata alone: cached, so a repeated shape costs one lookup."""

    splits: int
    split_len: int  # selection positions per split, whole chunks
    variant: DecodeVariant
    resolve: Optional[Callable]  # None: the decode resolves its own slices (variant.fused_resolve)
    decode: Callable
    combine: Optional[Callable]
    scratch: Tuple[Part, ...]  # what the launch needs besides out / lse (workspace.scratch_parts)


_plans: Dict[tuple, LaunchPlan] = {}


RESOLVE_MODES = ("slice", "stream")


def can_stream_resolve(problem, cfg: DecodeKernelConfig) -> bool:
    """The decode can resolve its ids window by window: the config has id windows and room for the
    step's shared memory, and the bitmap covers every token a row can address."""
    return cfg.can_stream_resolve() and 0 < problem.max_blocks * problem.block_size <= STREAM_RESOLVE_TOKENS


def resolve_mode(problem, cfg: DecodeKernelConfig, seg: int, fuse_resolve) -> str:
    """Who resolves the ids: "launch" (the resolve kernel), "slice" (each decode CTA its split, up
    front) or "stream" (each decode CTA window by window). `fuse_resolve`: None decides (splits of
    at most FUSED_RESOLVE_MAX_SPLIT positions streamed where the config and cache allow, else the
    launch; see heuristics.SLICE_RESOLVE_AUTO / STREAM_RESOLVE_AUTO), False takes the launch, True
    the decode (slice where the split fits the config's table, else streamed), and "slice"/"stream"
    force one. A pair config always takes the launch."""
    if cfg.pair:
        # A pair's two CTAs each gather half of every tile: neither resolves ids the other reads.
        if fuse_resolve not in (None, False):
            raise ValueError(f"fuse_resolve={fuse_resolve!r}: {cfg.label()} (pair) takes the resolve launch; expected None or False")
        return "launch"
    longest = cfg.fused_resolve_max_split()
    stream = can_stream_resolve(problem, cfg)
    if fuse_resolve is None:
        if seg <= FUSED_RESOLVE_MAX_SPLIT:
            return "slice" if SLICE_RESOLVE_AUTO else "stream" if stream else "launch"
        return "stream" if stream and STREAM_RESOLVE_AUTO else "launch"
    if fuse_resolve is False:
        return "launch"
    if fuse_resolve == "stream" or (fuse_resolve is True and seg > longest):
        if not stream:
            raise ValueError(
                f"fuse_resolve={fuse_resolve!r}: splits of {seg} positions need the streamed resolve (at most {longest} "
                f"resolve up front), which needs id windows and {cfg.stream_resolve_bytes()} more bytes of shared memory "
                f"({cfg.label()}: id_window={cfg.id_window}, {cfg.smem_bytes()} bytes) and a cache whose rows address "
                f"at most {STREAM_RESOLVE_TOKENS} tokens (block_table.shape[1] x block_size = {problem.max_blocks * problem.block_size})"
            )
        return "stream"
    if seg > longest:
        raise ValueError(f"fuse_resolve={fuse_resolve!r}: splits of {seg} positions, expected at most {longest} ({cfg.label()})")
    return "slice"


@dataclass(frozen=True)
class LaunchSpec:
    """What a call launches, decided from the shape and the GPU alone (no device needed: `cute-dsa
    precompile` builds the kernels of a GPU's specs on a machine without one)."""

    splits: int
    split_len: int  # selection positions per split, whole chunks
    variant: DecodeVariant
    resolve_slots: Optional[int]  # hash-table slots of the resolve launch; None: no resolve launch


def launch_spec(problem, gpu: Optional[Tuple[str, int]], config, num_splits, write_lse: bool, fuse_resolve=None,
                physical: bool = False) -> LaunchSpec:
    """`gpu`: (name, SM count), read only when `config` or `num_splits` is None. `fuse_resolve`: see
    `resolve_mode`. `physical`: the ids are cache rows already (no resolve)."""
    if config is None:
        choice = select_for_gpu(problem, gpu)
        cfg, auto_splits = choice.config, choice.splits
    else:
        cfg = config.validate()
        auto_splits = choose_splits(problem, cfg, gpu[1]) if num_splits is None else 0
    splits = num_splits if num_splits is not None else auto_splits  # an int: dsa_decode checked its type
    if not 1 <= splits <= cfg.max_splits:
        raise ValueError(f"num_splits={num_splits!r}: expected an int in [1, {cfg.max_splits}]")
    seg = split_length(problem.width, splits, cfg.chunk_tokens)
    splits = -(-problem.width // seg)  # no empty trailing split
    if physical and fuse_resolve not in (None, False):
        raise ValueError(f"fuse_resolve={fuse_resolve!r}: physical_indices=True has nothing to resolve; expected None or False")
    mode = "physical" if physical else resolve_mode(problem, cfg, seg, fuse_resolve)
    variant = DecodeVariant(
        config=cfg, split=splits > 1, write_lse=write_lse,
        k_scale_on_device=problem.k_scale_on_device, v_scale_on_device=problem.v_scale_on_device,
        flat_cache=problem.flat_cache, fused_resolve=mode == "slice", stream_resolve=mode == "stream",
        physical_ids=physical,
    )
    return LaunchSpec(splits, seg, variant, resolve_table_slots(problem.width) if mode == "launch" else None)


def spec_kernels(spec: LaunchSpec) -> Tuple[Optional[Callable], Callable, Optional[Callable]]:
    """The compiled (resolve, decode, combine) of a spec; None where it launches none."""
    resolve = None if spec.resolve_slots is None else kc.resolve_kernel(spec.resolve_slots)
    combine = kc.combine_kernel(spec.variant.write_lse, spec.splits) if spec.splits > 1 else None
    return resolve, kc.decode_kernel(spec.variant), combine


def launch_plan(problem, device: torch.device, config, num_splits, write_lse: bool, fuse_resolve=None,
                physical: bool = False) -> LaunchPlan:
    """`fuse_resolve`: see `resolve_mode`. `physical`: the ids are cache rows already (no resolve)."""
    key = (problem, device.index, config, num_splits, write_lse, fuse_resolve, physical)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    gpu = device_info(device) if config is None or num_splits is None else None
    spec = launch_spec(problem, gpu, config, num_splits, write_lse, fuse_resolve, physical)
    resolve, decode, combine = spec_kernels(spec)
    plan = _plans[key] = LaunchPlan(
        splits=spec.splits, split_len=spec.split_len, variant=spec.variant, resolve=resolve, decode=decode,
        combine=combine, scratch=scratch_parts(spec.variant, spec.splits, problem.num_rows, problem.num_heads, problem.width),
    )
    return plan


def cache_operand(kv_cache: torch.Tensor, problem) -> torch.Tensor:
    """The cache as the decode kernel takes it: bytes, and (rows, token_bytes) when flat."""
    cache = kv_cache if kv_cache.dtype == torch.uint8 else kv_cache.view(torch.uint8)
    return cache.flatten(0, 1) if problem.flat_cache else cache  # a view: the blocks are back to back


def _prepare(q, kv_cache, block_table, seq_lens, indices, *, k_scale, v_scale, softmax_scale, index_kpool, out, lse,
             return_lse, config, num_splits, fuse_resolve, physical_indices, check_indices):
    """The argument checks and the launch decision shared by `dsa_decode` and `decode_workspace_bytes`."""
    if not isinstance(physical_indices, bool):
        raise TypeError(f"physical_indices={physical_indices!r}: expected a bool")
    kv_cache = squeeze_kv_head(kv_cache)
    problem = check_decode_args(
        q, kv_cache, block_table, seq_lens, indices,
        k_scale=k_scale, v_scale=v_scale, softmax_scale=softmax_scale, index_kpool=index_kpool, out=out, lse=lse,
    )
    if problem.width > MAX_WIDTH:
        raise ValueError(f"indices.shape[1] (width)={problem.width}: expected <= {MAX_WIDTH}")
    if problem.num_blocks * problem.block_size >= 2**31:
        raise ValueError(
            f"kv_cache.shape={tuple(kv_cache.shape)}: expected fewer than 2**31 token rows (int32 row ids)"
        )
    if check_indices:
        _check_index_values(kv_cache, block_table, seq_lens, indices, physical_indices)
    if config is not None and not isinstance(config, DecodeKernelConfig):
        raise TypeError(f"config={config!r}: expected a cute_dsa.DecodeKernelConfig or None")
    if num_splits is not None and (isinstance(num_splits, bool) or not isinstance(num_splits, int)):
        raise ValueError(f"num_splits={num_splits!r}: expected an int or None")
    write_lse = return_lse or lse is not None
    if fuse_resolve is not None and not isinstance(fuse_resolve, bool) and fuse_resolve not in RESOLVE_MODES:
        raise ValueError(f"fuse_resolve={fuse_resolve!r}: expected None (automatic), True, False, 'slice' or 'stream'")
    plan = launch_plan(problem, q.device, config, num_splits, write_lse, fuse_resolve, physical_indices)
    return kv_cache, problem, plan, write_lse


def decode_workspace_bytes(
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
    lse: Optional[torch.Tensor] = None,
    return_lse: bool = True,
    config: Optional[DecodeKernelConfig] = None,
    num_splits: Optional[int] = None,
    fuse_resolve: Optional[bool] = None,
    physical_indices: bool = False,
) -> int:
    """Bytes of the uint8 `workspace` that `dsa_decode` with these arguments needs to allocate
    nothing (0 when it needs no scratch). Metadata only: no launch, no synchronisation. The
    launch decision depends on the GPU and the shape, so size a workspace on the device, for the
    largest shape it will serve (the maximum over the batch sizes of a CUDA-graph set)."""
    *_, plan, _ = _prepare(
        q, kv_cache, block_table, seq_lens, indices, k_scale=k_scale, v_scale=v_scale, softmax_scale=softmax_scale,
        index_kpool=index_kpool, out=None, lse=lse, return_lse=return_lse, config=config, num_splits=num_splits,
        fuse_resolve=fuse_resolve, physical_indices=physical_indices, check_indices=False,
    )
    return workspace_bytes(plan.scratch)


def dsa_decode(
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
    out: Optional[torch.Tensor] = None,
    lse: Optional[torch.Tensor] = None,
    return_lse: bool = True,
    config: Optional[DecodeKernelConfig] = None,
    num_splits: Optional[int] = None,
    fuse_resolve: Optional[bool] = None,
    physical_indices: bool = False,
    check_indices: bool = False,
    workspace: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Sparse MLA decode over the selected token set of each row.

    Returns (out [rows, heads, 512] bf16, lse [rows, heads] fp32 natural log, or None when
    return_lse is False and no `lse` buffer was given). See README.md for the semantics.

    physical_indices=True takes FlashMLA's contract: `indices` are cache rows already
    (block * block_size + slot), distinct within a row (a repeated id counts once per occurrence);
    -1 and any id outside [0, num_blocks * block_size) select nothing. No resolve runs, and
    block_table and seq_lens are checked but not read.

    workspace: a contiguous uint8 tensor on q's device holding the call's scratch (resolved ids,
    split-KV partials) instead of fresh allocations; `decode_workspace_bytes` gives its size.
    With `out` (and `lse`, or return_lse=False) too, the call allocates nothing.
    """
    kv_cache, problem, plan, write_lse = _prepare(
        q, kv_cache, block_table, seq_lens, indices, k_scale=k_scale, v_scale=v_scale, softmax_scale=softmax_scale,
        index_kpool=index_kpool, out=out, lse=lse, return_lse=return_lse, config=config, num_splits=num_splits,
        fuse_resolve=fuse_resolve, physical_indices=physical_indices, check_indices=check_indices,
    )
    tmp = scratch(plan.scratch, workspace, q.device)
    rows, heads = problem.num_rows, problem.num_heads
    if out is None:
        out = torch.empty(rows, heads, KV_LORA_RANK, dtype=torch.bfloat16, device=q.device)
    if lse is None and write_lse:
        lse = torch.empty(rows, heads, dtype=torch.float32, device=q.device)
    scale = float(softmax_scale) if softmax_scale is not None else KV_LORA_RANK ** -0.5
    cache_bytes = cache_operand(kv_cache, problem)

    # No "phys" part: the ids are the decode's rows as given, or streamed (phys never read).
    phys = tmp.get("phys", indices)
    if plan.resolve is not None:
        plan.resolve(indices, seq_lens, block_table, phys, problem.block_size, problem.num_blocks)
    ks = k_scale.reshape(1) if problem.k_scale_on_device else float(k_scale)
    vs = v_scale.reshape(1) if problem.v_scale_on_device else float(v_scale)
    splits, seg = plan.splits, plan.split_len
    ids = (indices, seq_lens, block_table)
    if splits == 1:
        lse_arg = lse if lse is not None else tmp["lse"]
        plan.decode(q, cache_bytes, phys, *ids, ks, vs, scale, out, lse_arg, seg, 1, problem.block_size, problem.num_blocks)
    else:
        o_part, lse_part = tmp["o_part"], tmp["lse_part"]
        plan.decode(q, cache_bytes, phys, *ids, ks, vs, scale, o_part, lse_part, seg, splits, problem.block_size, problem.num_blocks)
        lse_arg = lse if lse is not None else lse_part[:, 0]  # unused when write_lse is False
        plan.combine(o_part, lse_part, out, lse_arg)
    return out, (lse if write_lse else None)
