"""Analytical defaults: which kernel config and how many splits, from the shape alone."""

from __future__ import annotations

from .checks import DecodeProblem
from .kernel_config import DecodeKernelConfig

NUM_SMS_H200 = 132
MIN_CHUNKS_PER_SPLIT = 2  # fewer and the per-CTA prologue (Q load) dominates


def default_config(problem: DecodeProblem) -> DecodeKernelConfig:
    return DecodeKernelConfig()


def head_tiles(problem: DecodeProblem, config: DecodeKernelConfig) -> int:
    return -(-problem.num_heads // config.head_tile)


def choose_splits(problem: DecodeProblem, config: DecodeKernelConfig, num_sms: int = NUM_SMS_H200) -> int:
    """Enough CTAs to fill the SMs once (one decode CTA fits per SM), no split thinner than
    MIN_CHUNKS_PER_SPLIT chunks, never more than config.max_splits."""
    ctas = problem.num_rows * head_tiles(problem, config)
    want = -(-num_sms // ctas)
    chunks = -(-problem.width // config.chunk_tokens)
    most = max(1, chunks // MIN_CHUNKS_PER_SPLIT)
    return max(1, min(want, most, config.max_splits))


def split_length(width: int, splits: int, chunk_tokens: int) -> int:
    """Selection positions per split, a whole number of chunks."""
    per = -(-width // splits)
    return -(-per // chunk_tokens) * chunk_tokens


def resolve_table_slots(width: int) -> int:
    """Hash-table size for the duplicate filter: a power of two, at most half full up to 16k ids."""
    slots = 64
    while slots < 2 * width and slots < MAX_TABLE_SLOTS:
        slots *= 2
    return slots


MAX_TABLE_SLOTS = 32768  # 128 KiB of shared memory
MAX_WIDTH = MAX_TABLE_SLOTS
