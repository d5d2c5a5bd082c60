"""Analytical defaults: which kernel config and how many splits, from the shape alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .checks import DecodeProblem
from .kernel_config import SMEM_LIMIT, TOKENS_M_HEAD_TILES, DecodeKernelConfig

NUM_SMS_H200 = 132
MIN_CHUNKS_PER_SPLIT = 2  # fewer and the per-CTA prologue (Q load) dominates
# From this many query rows up, register-fed consumers (8 and 16 heads) beat consumer-side
# conversion: 1.00-1.27x in the H200 sweep at 64-256 rows, within 5% either way at 32 and slower
# at 8 and below, where a CTA has too few chunks to hide the longer per-chunk chain.
REGISTER_FED_MIN_ROWS = 64
# Heads as M: 64-token tiles gathered through registers, one consumer scoring. Faster than the
# 32-token cp.async configs in every 64/128-head bucket measured on the H200: it won the re-tune
# of every bucket from 32 rows (fded3fe) and was 17-34% faster at 1-8 rows (793a259).
HEADS_M_CONFIG = DecodeKernelConfig(chunk_tokens=64, stages=4, gather="ld_global", scores="one")
# Above this many heads the default is heads as M, 17-32 heads padded to one 64-row tile: that
# kernel is faster than tokens as M with the 32-head tile at every batch measured (H100, 9d87f27,
# 32 heads, B 1-256, W 2048/2176, graph µs, e.g. B=1 15.4 vs 17.1, B=128 96.3 vs 104.5, B=256
# 182.9 vs 204.1; benchmarks/runs/2026-12-07-h100-h32b_*). At 16 heads tokens as M stays ahead.
TOKENS_M_MAX_HEADS = 16


def tokens_m_tile(heads: int) -> Optional[int]:
    """The smallest tokens-as-M head tile (wgmma N) that holds `heads`, None above 32."""
    return next((t for t in TOKENS_M_HEAD_TILES if t >= heads), None)


def default_config(problem: DecodeProblem) -> DecodeKernelConfig:
    """Tokens as M up to TOKENS_M_MAX_HEADS heads: register-fed consumers with the early slot
    hand-back from REGISTER_FED_MIN_ROWS rows up, consumer-side conversion below; heads as M above
    (HEADS_M_CONFIG)."""
    if problem.num_heads > TOKENS_M_MAX_HEADS:
        return HEADS_M_CONFIG
    tile = tokens_m_tile(problem.num_heads)
    if problem.num_rows >= REGISTER_FED_MIN_ROWS:
        # The ring slot handed back before the softmax: 3-14% faster at 64-256 rows (H200, 1ae5a9b).
        return DecodeKernelConfig(tiling="tokens_m", head_tile=tile, chunk_tokens=64, stages=4, convert="registers", release_early=True)
    return DecodeKernelConfig(tiling="tokens_m", head_tile=tile, chunk_tokens=64, stages=4, convert="consumer")


def fit_to_heads(config: DecodeKernelConfig, heads: int) -> DecodeKernelConfig:
    """A config chosen for another head count (a tuned bucket), made right for `heads`: tokens as
    M takes the head tile that holds them (fewer ring stages if the larger tile needs the shared
    memory), or gives way to the heads-as-M default where the heuristic would (a larger tile above
    TOKENS_M_MAX_HEADS heads, and above 32)."""
    if config.tiling != "tokens_m":
        if config.pair and heads <= config.head_tile:
            return replace(config, pair=False, stages=max(config.stages, 4)).validate()  # one head tile: nothing to share
        return config
    tile = tokens_m_tile(heads)
    if tile is None or (tile != config.head_tile and heads > TOKENS_M_MAX_HEADS):
        return HEADS_M_CONFIG
    fitted = replace(config, head_tile=tile)
    if tile == 32 and config.convert == "registers":  # 32 heads register-fed: slower in every bucket
        fitted = replace(fitted, stages=3, convert="producer", release_early=False, id_window=config.id_window or 128)
    if fitted.smem_bytes() > SMEM_LIMIT:  # the larger tile needs the shared memory of a ring slot
        fitted = replace(fitted, stages=fitted.stages - 1, convert="producer", release_early=False)
    return fitted.validate()


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


# Splits of at most this many positions (small batch) resolve their ids in the decode: window by
# window (stream) where the config and cache allow, else the resolve launch; the up-front slice
# resolve only when asked for (fuse_resolve="slice" / True). The slice won on the H200 at 12a1f02
# (seventh session: 1-5 µs faster than the launch with splits of 64-128 positions; 10-56 µs slower
# with one split of 2048), but at 89f40d1 on an H100 (thirteenth session, `cute-dsa ablate --graph`,
# W=2048, B 1-8, H 8-128, 13 cells) the slice call is slower than the launch in every cell, by 2-14
# µs (B=1 H=8: slice 24.0, launch 17.1, stream 14.3 µs; B=8 H=64: 50.2, 40.6, 33.2), and the
# stream the fastest wherever it applies (heads as M and 8-head tokens as M).
FUSED_RESOLVE_MAX_SPLIT = 128
SLICE_RESOLVE_AUTO = False
# Longer splits could resolve their ids window by window inside the decode too (kernels/stream_resolve.py,
# fuse_resolve="stream"), but on the H200 that decode runs 1.4x longer than the decode plus the
# resolve launch it replaces (graph replay, B=128 W=2048: H=8 81.7 vs 63.9 µs, H=64 146.9 vs 110.1;
# benchmarks/gpu-tests.md, eighth session): the automatic choice keeps the launch.
STREAM_RESOLVE_AUTO = False


def resolve_table_slots(width: int) -> int:
    """Hash-table size for the duplicate filter: a power of two, at most half full up to 16k ids."""
    slots = 64
    while slots < 2 * width and slots < MAX_TABLE_SLOTS:
        slots *= 2
    return slots


MAX_TABLE_SLOTS = 32768  # 128 KiB of shared memory
MAX_WIDTH = MAX_TABLE_SLOTS
