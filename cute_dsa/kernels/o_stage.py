"""Where a heads-as-M consumer's O half sits while it leaves through shared memory.

A consumer holds O[:, 256 dims] in the wgmma accumulator layout: each thread two rows and pairs
of adjacent columns, so a warp's store straight to global memory touches 8 rows at once. The O
half is instead staged in the consumer's half of the Q tile (32 KB, dead after the last QK) and
read back as 16-byte units of one row per thread, 32 threads covering a 512-byte run.

Rows of 16-byte units, unit u of staged row sr at u ^ (sr % 8): a warp's accumulator pairs (8
rows x 4 threads) land in 8 different units of a 128-byte bank line, and a warp's row read is a
permutation of one row's units, so neither conflicts. FP32 partials (64 KB per half) take two
passes of 32 rows: the rows r with (r % 16) // 8 == pass, the accumulator's upper or lower 8 of
each warp's 16. The functions take Python ints or DSL integers alike (the kernel's coordinates).
"""

from __future__ import annotations

from typing import NamedTuple

STAGE_BYTES = 32768  # a consumer's half of the 64 x 512 FP16 Q tile
STAGE_COLS = 256  # the consumer's output dims: sparse_decode.DV_PER_WG (checked there)


class StageShape(NamedTuple):
    vec: int  # elements per 16-byte unit
    units: int  # units per staged row
    rows: int  # staged rows per pass
    passes: int  # passes to stage all `head_rows` accumulator rows


def stage_shape(elem_bytes: int, head_rows: int = 64) -> StageShape:
    vec = 16 // elem_bytes
    rows = STAGE_BYTES // (STAGE_COLS * elem_bytes)
    return StageShape(vec, STAGE_COLS // vec, rows, head_rows // rows)


def staged_row(r, passes: int):
    """The staged row of accumulator row r (in the pass (r % 16) // 8 when there are two)."""
    return r if passes == 1 else (r // 16) * 8 + r % 8


def tile_row(sr, ps: int, passes: int):
    """The accumulator row of staged row sr in pass ps (the inverse of `staged_row`)."""
    return sr if passes == 1 else (sr // 8) * 16 + ps * 8 + sr % 8


def stage_index(sr, c, vec: int):
    """The element index in the stage of staged row sr, column c."""
    return sr * STAGE_COLS + ((c // vec) ^ (sr % 8)) * vec + c % vec


def stage_unit(sr, u, units: int):
    """The unit index in the stage (16 bytes each) of staged row sr, logical unit u."""
    return sr * units + (u ^ (sr % 8))
