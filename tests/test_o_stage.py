"""The heads-as-M O staging (`kernels/o_stage.py`): every accumulator element lands in its own slot
of the 32 KB stage, each 16-byte read returns the 8 (BF16) or 4 (FP32) consecutive columns of
one row it is stored as, and neither the writes nor the reads conflict in shared-memory banks.

The accumulator is modelled as the SM90 wgmma m64nN layout (what `partition_C` gives the
kernel): thread t = 32w + l holds rows 16w + l // 4 (+ 8) and columns 8j + 2 (l % 4) (+ 1); its
element i = v0 + 2 v1 + 4 j is (row 16w + l // 4 + 8 v1, column 8j + 2 (l % 4) + v0)."""

from collections import Counter

import pytest

from cute_dsa.kernels.o_stage import STAGE_BYTES, STAGE_COLS, stage_index, stage_shape, stage_unit, staged_row, tile_row

WG = 128


def acc_coord(t, i):
    w, lane = divmod(t, 32)
    v0, v1, j = i % 2, (i // 2) % 2, i // 4
    return 16 * w + lane // 4 + 8 * v1, 8 * j + 2 * (lane % 4) + v0


@pytest.mark.parametrize("elem_bytes", [2, 4])
def test_stage_round_trip_and_banks(elem_bytes):
    vec, units, rows, passes = stage_shape(elem_bytes)
    assert rows * STAGE_COLS * elem_bytes == STAGE_BYTES and rows * passes == 64
    seen = set()
    for ps in range(passes):
        slots = {}
        for i in range(0, STAGE_COLS // 2, 2):  # one warp instruction per pair index
            if passes > 1 and (i // 2) % 2 != ps:
                continue
            for w in range(4):
                banks = Counter()
                for lane in range(32):
                    t = 32 * w + lane
                    r, c = acc_coord(t, i)
                    assert acc_coord(t, i + 1) == (r, c + 1)
                    idx = stage_index(staged_row(r, passes), c, vec)
                    assert idx % 2 == 0 and stage_index(staged_row(r, passes), c + 1, vec) == idx + 1
                    for e in (0, 1):
                        assert idx + e not in slots, "two accumulator elements share a stage slot"
                        slots[idx + e] = (r, c + e)
                        banks[(idx + e) * elem_bytes // 4 % 32] += 1 if elem_bytes == 4 or e == 0 else 0
                # 32 threads x 4 bytes: one bank each; x 8 bytes: two wavefronts at best.
                assert max(banks.values()) == (1 if elem_bytes == 2 else 2)
        assert len(slots) == rows * STAGE_COLS
        step = WG // units
        for k in range(rows // step):
            for w in range(4):
                banks = Counter()
                for lane in range(32):
                    t = 32 * w + lane
                    sr, u = t // units + step * k, t % units
                    r = tile_row(sr, ps, passes)
                    assert staged_row(r, passes) == sr
                    unit = stage_unit(sr, u, units)
                    for e in range(vec):
                        assert slots[unit * vec + e] == (r, u * vec + e)
                        seen.add((r, u * vec + e))
                    for word in range(4):
                        banks[(unit * 16 // 4 + word) % 32] += 1
                assert max(banks.values()) == 4  # 512 bytes a warp: four wavefronts, no more
    assert len(seen) == 64 * STAGE_COLS
