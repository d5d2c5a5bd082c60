"""Raw FP8 latent rows -> wgmma A fragments in registers (tokens as M, convert="registers").

With tokens as M both MMAs take the latent as their A operand (S^T = K Q^T: A = K, tokens x dims;
O^T = V^T P^T: A = V^T, dims x tokens), and an A operand may come from registers. So the consumers
read the raw FP8 bytes the producer gathered and convert them straight into the fragments: no
FP16 K/V tile is written to or read from shared memory (that traffic bounded the decode).

A thread of the m64k16 A fragment holds rows g and g+8 of its warp's 16 (g = lane / 4) and
columns 2c, 2c+1, 2c+8, 2c+9 (c = lane % 4): as 32-bit words R0 = (g, 2c..2c+1), R1 = (g+8, 2c..),
R2 = (g, 2c+8..), R3 = (g+8, 2c+8..). Two fixed permutations make every fragment a byte-aligned
slice of 16-byte loads:

* K (reduction over dims): in each 64-dim block, thread c loads the 16 bytes [16c, 16c+16) of
  its two token rows; byte 4kb + j of them is logical dim 16kb + 2c + (j % 2) + 8 (j // 2). One
  word per k-block and row, R0/R2 = its low/high halves. Q is stored with the same permutation
  (`logical_dim`), so Q.K is unchanged.
* V^T (reduction over tokens; rows = dims): thread (warp w, g) owns the 16 physical dims
  [16(8w + g), +16), byte 2mt + h of a token being row 16w + g + 8h of m-tile mt. Tokens 2c and
  2c+1 (and 2c+8, 2c+9) of a k-block pair up with one `prmt` per m-tile; the output's dims are
  permuted back on the store (`output_dim`).

The raw ring rows are 512 bytes, so both read patterns would hit the same banks; the producer
stores 16-byte unit u of token t at unit u ^ `unit_swizzle(t)`, which makes both conflict-free.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Uint32
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op

UNIT_WORDS = 4  # 32-bit words per 16-byte unit


def unit_swizzle(tok):
    """XOR applied to a row's 16-byte unit index (low 3 bits): conflict-free 128-bit loads for both
    the K pattern (rows t, t+1 x 4 units) and the V pattern (rows t, t+2, t+4, t+6 x 2 units)."""
    return (((tok >> 1) & 3) << 1) ^ ((tok & 1) << 2)


def logical_dim(d):
    """Where physical latent dim d sits in the K-fragment order (Q is stored in this order)."""
    blk, r = d // 64, d % 64
    c, kb, j = r // 16, (r % 16) // 4, r % 4
    return 64 * blk + 16 * kb + 2 * c + (j % 2) + 8 * (j // 2)


def output_dim(row):
    """The physical latent dim of row `row` of O^T (the V^T fragment order)."""
    mt, r = row // 64, row % 64
    return 128 * (r // 16) + 16 * (r % 8) + 2 * mt + (r % 16) // 8


@dsl_user_op
def _asm_u32(text, *args, loc=None, ip=None):
    return Uint32(
        llvm.inline_asm(T.i32(), [Uint32(a).ir_value(loc=loc, ip=ip) for a in args], text, "=r" + ",r" * len(args))
    )


@cute.jit
def cvt_low(word, convert: cutlass.Constexpr = True):
    """FP16x2 of the two E4M3 bytes in the low half of `word` (byte 0 -> element 0). Ablation
    (convert=False): the raw word itself, so only the conversion's ALU work is left out."""
    if cutlass.const_expr(not convert):
        return word
    return _asm_u32("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $1; cvt.rn.f16x2.e4m3x2 $0, lo; }", word)


@cute.jit
def cvt_high(word, convert: cutlass.Constexpr = True):
    if cutlass.const_expr(not convert):
        return word
    return _asm_u32("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $1; cvt.rn.f16x2.e4m3x2 $0, hi; }", word)


@cute.jit
def interleave(a, b, byte: cutlass.Constexpr):
    """Bytes [a.byte, b.byte, a.byte+1, b.byte+1]: one dim pair of two tokens."""
    sel = byte | ((4 + byte) << 4) | ((byte + 1) << 8) | ((5 + byte) << 12)
    return _asm_u32(f"prmt.b32 $0, $1, $2, {sel};", a, b)


@cute.jit
def load_unit(s_raw32, tok, unit, slot):
    """The 16 bytes of unit `unit` of token row `tok` in ring slot `slot`, as 4 words."""
    w = cute.make_rmem_tensor(cute.make_layout(UNIT_WORDS), Uint32)
    pos = unit ^ unit_swizzle(tok)
    w.store(cute.local_tile(s_raw32[None, tok, slot], (UNIT_WORDS,), (pos,)).load())
    return w


@cute.jit
def fill_k_blocks(frag32, s_raw32, slot, blk0, nblk: cutlass.Constexpr, wg_tid, convert: cutlass.Constexpr = True):
    """K fragments of 64-dim blocks [blk0, blk0 + nblk) (4 k-blocks each) into `frag32`, the
    Uint32 view of an A fragment of 4 * nblk k-blocks."""
    lane = wg_tid % 32
    tok = 16 * (wg_tid // 32) + lane // 4
    c = lane % 4
    for b in cutlass.range_constexpr(nblk):
        w0 = load_unit(s_raw32, tok, 4 * (blk0 + b) + c, slot)
        w1 = load_unit(s_raw32, tok + 8, 4 * (blk0 + b) + c, slot)
        for kb in cutlass.range_constexpr(4):
            base = 4 * (4 * b + kb)
            frag32[base + 0] = cvt_low(w0[kb], convert)
            frag32[base + 1] = cvt_low(w1[kb], convert)
            frag32[base + 2] = cvt_high(w0[kb], convert)
            frag32[base + 3] = cvt_high(w1[kb], convert)


@cute.jit
def load_vt_kblock(s_raw32, slot, kb, wg_tid):
    """The raw rows a thread needs for the V^T fragments of tokens [16kb, 16kb + 16): its 16-byte
    unit of tokens 2c, 2c+1, 2c+8, 2c+9 (four 128-bit loads)."""
    lane = wg_tid % 32
    unit = 8 * (wg_tid // 32) + lane // 4
    t0 = 16 * kb + 2 * (lane % 4)
    return [load_unit(s_raw32, t0 + t, unit, slot) for t in (0, 1, 8, 9)]


@cute.jit
def convert_vt_kblock(frag32, units, convert: cutlass.Constexpr = True):
    """`load_vt_kblock`'s units -> V^T fragments of all 8 m-tiles of 64 dims in `frag32`, the
    Uint32 view of an A fragment ((2,2,2), 8, 1)."""
    a0, a1, b0, b1 = units
    for mt in cutlass.range_constexpr(8):
        wi = mt // 2
        byte = 2 * (mt % 2)
        lo = interleave(a0[wi], a1[wi], byte)  # rows (g, g+8) x tokens (2c, 2c+1)
        hi = interleave(b0[wi], b1[wi], byte)  # rows (g, g+8) x tokens (2c+8, 2c+9)
        frag32[4 * mt + 0] = cvt_low(lo, convert)
        frag32[4 * mt + 1] = cvt_high(lo, convert)
        frag32[4 * mt + 2] = cvt_low(hi, convert)
        frag32[4 * mt + 3] = cvt_high(hi, convert)
