"""Host-side checks of the register-fed (convert="registers") fragment order: the two dim
permutations are bijections that agree with the wgmma A-fragment layout, and the raw ring's unit
swizzle makes both 128-bit read patterns bank-conflict free. (The kernel itself is checked against
the oracle by the GPU suite.)"""

from cute_dsa.kernels.fp8_fragments import logical_dim, output_dim, unit_swizzle


def _a_fragment_coord(lane, reg, half):
    """(row, k) within the warp's 16 x 16 tile of the m64k16 A fragment: register R0..R3, element
    0/1 (PTX ISA, wgmma register fragment A for .f16)."""
    g, c = lane // 4, lane % 4
    return g + 8 * (reg % 2), 2 * c + half + 8 * (reg // 2)


def test_permutations_are_bijections():
    assert sorted(logical_dim(d) for d in range(512)) == list(range(512))
    assert sorted(output_dim(r) for r in range(512)) == list(range(512))


def test_k_fragment_order_matches_q():
    """Thread c loads bytes [16c, 16c + 16) of a 64-dim block; word kb, byte j goes to R0/R2 (row g)
    element j % 2 of k-block kb. That element's k must be logical_dim of the byte's physical dim."""
    for blk in range(8):
        for lane in range(32):
            c = lane % 4
            for kb in range(4):
                for j in range(4):
                    reg, half = 2 * (j // 2), j % 2
                    _, k = _a_fragment_coord(lane, reg, half)
                    phys = 64 * blk + 16 * c + 4 * kb + j
                    assert logical_dim(phys) == 64 * blk + 16 * kb + k


def test_vt_fragment_order_matches_output():
    """Thread (warp w, g) owns the 16 bytes [16(8w + g), +16) of each token; byte 2mt + h is row
    16w + g + 8h of m-tile mt, i.e. R0/R1 (h = 0/1) hold rows g, g + 8."""
    for w in range(4):
        for lane in range(32):
            for mt in range(8):
                for h in range(2):
                    row, _ = _a_fragment_coord(lane, h, 0)
                    phys = 16 * (8 * w + lane // 4) + 2 * mt + h
                    assert output_dim(64 * mt + 16 * w + row) == phys


def _conflict_free(byte_addrs):
    return len({(a % 128) // 16 for a in byte_addrs}) == len(byte_addrs)


def _addr(tok, unit):
    return 512 * tok + 16 * (unit ^ unit_swizzle(tok))


def test_unit_swizzle_conflict_free():
    """A 128-bit shared load serves 8 lanes per phase; their 16-byte units must be distinct mod 128 B."""
    for w in range(4):
        for phase in range(4):
            lanes = range(8 * phase, 8 * phase + 8)
            for blk in range(8):
                for row in (0, 8):  # K pattern: rows g, g + 8, units 4 blk + c
                    assert _conflict_free([_addr(16 * w + l // 4 + row, 4 * blk + l % 4) for l in lanes])
            for kb in range(4):
                for t in (0, 1, 8, 9):  # V^T pattern: tokens 2c + t, unit 8w + g
                    assert _conflict_free([_addr(16 * kb + 2 * (l % 4) + t, 8 * w + l // 4) for l in lanes])
    # Without the swizzle the V^T pattern is a 4-way conflict (rows are 512 bytes).
    assert not _conflict_free([512 * (2 * (l % 4)) + 16 * (l // 4) for l in range(8)])


def test_q_pairs_follow_logical_dim():
    """The producer stores Q's physical dims 8p..8p+7 as four pairs at logical_dim(8p) + 8k."""
    for p in range(64):
        first = logical_dim(8 * p)
        for e in range(8):
            assert logical_dim(8 * p + e) == first + 8 * (e // 2) + e % 2
