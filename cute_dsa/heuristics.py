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
    """The split count with the least time in waves (one decode CTA fits per SM): a split of s
    costs ceil(ctas * s / num_sms) waves of 1/s of the work each. No split thinner than
    MIN_CHUNKS_PER_SPLIT chunks, never more than config.max_splits; ties go to fewer splits
    (less combine work). E.g. 64 CTAs on 132 SMs: 2 splits (one full wave), not 3 (1.45 waves)."""
    ctas = problem.num_rows * head_tiles(problem, config)
    chunks = -(-problem.width // config.chunk_tokens)
    most = max(1, min(chunks // MIN_CHUNKS_PER_SPLIT, config.max_splits, -(-num_sms // ctas)))
    return min(range(1, most + 1), key=lambda s: (-(-ctas * s // num_sms) / s, s))


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
