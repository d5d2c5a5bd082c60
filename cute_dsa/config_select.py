"""Run-time choice of the kernel config (tuned YAML lookup comes with the tuning issue)."""

from __future__ import annotations

import torch

from .checks import DecodeProblem
from .heuristics import default_config
from .kernel_config import DecodeKernelConfig


def select_config(problem: DecodeProblem, device: torch.device) -> DecodeKernelConfig:
    return default_config(problem)
