"""Run-time choice of the kernel config and split count: the tuned YAML entry of the nearest
shape bucket for this GPU, else the analytical heuristic (with a one-time warning).

The choice is cached per (GPU, shape), so a call costs one dict lookup after the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

import torch

from .checks import DecodeProblem
from .heuristics import choose_splits, default_config, fit_to_heads, head_tiles
from .kernel_config import DecodeKernelConfig
from .tuning_table import ShapeKey, table_for, warn_once

# Beyond this log-distance (see ShapeKey.distance) the nearest tuned bucket says little.
MAX_DISTANCE = 4.0


@dataclass(frozen=True)
class LaunchChoice:
    config: DecodeKernelConfig
    splits: int
    source: str  # "tuned <bucket>" or "heuristic"


def shape_key(problem: DecodeProblem) -> ShapeKey:
    return ShapeKey(problem.num_rows, problem.num_heads, problem.width, problem.block_size)


def heuristic_choice(problem: DecodeProblem, num_sms: int) -> LaunchChoice:
    cfg = default_config(problem)
    return LaunchChoice(cfg, choose_splits(problem, cfg, num_sms), "heuristic")


def choice_for(problem: DecodeProblem, gpu: str, num_sms: int) -> LaunchChoice:
    table = table_for(gpu)
    key = shape_key(problem)
    if table is None:
        warn_once(f"cute_dsa: no tuning table for {gpu!r}; using the analytical heuristic")
        return heuristic_choice(problem, num_sms)
    entry = table.nearest(key)
    if entry is None or entry.shape.distance(key) > MAX_DISTANCE:
        warn_once(f"cute_dsa: no tuned bucket near {key} for {gpu!r}; using the analytical heuristic")
        return heuristic_choice(problem, num_sms)
    tuned = entry.best.config
    cfg = fit_to_heads(tuned, problem.num_heads)
    # Keep the tuned bucket's number of CTAs when the batch differs from the bucket's.
    ctas = entry.best.splits * entry.shape.batch * -(-entry.shape.heads // tuned.head_tile)
    splits = -(-ctas // (problem.num_rows * head_tiles(problem, cfg)))
    chunks = -(-problem.width // cfg.chunk_tokens)
    splits = max(1, min(splits, cfg.max_splits, chunks))
    return LaunchChoice(cfg, splits, f"tuned {entry.shape}")


_device_info: Dict[int, Tuple[str, int]] = {}
_choices: Dict[Tuple[str, DecodeProblem], LaunchChoice] = {}


def device_info(device: torch.device) -> Tuple[str, int]:
    """(name, SM count) of a CUDA device, cached."""
    idx = device.index if device.index is not None else torch.cuda.current_device()
    info = _device_info.get(idx)
    if info is None:
        props = torch.cuda.get_device_properties(idx)
        info = _device_info[idx] = (props.name, props.multi_processor_count)
    return info


def select_for_gpu(problem: DecodeProblem, gpu: Tuple[str, int]) -> LaunchChoice:
    """The choice for a GPU given as (name, SM count), cached."""
    key = (gpu[0], problem)
    choice = _choices.get(key)
    if choice is None:
        choice = _choices[key] = choice_for(problem, *gpu)
    return choice


def select_launch(problem: DecodeProblem, device: torch.device) -> LaunchChoice:
    return select_for_gpu(problem, device_info(device))
