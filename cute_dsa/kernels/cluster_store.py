"""Stores into the shared memory of the other CTA of a two-CTA cluster (sm_90 distributed shared
memory), as 32-bit shared::cluster addresses: the peer's base addresses are mapped once (`mapa`),
each store then adds a plain byte offset, so no per-store pointer mapping holds registers."""

from __future__ import annotations

from cutlass import Uint32
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op


@dsl_user_op
def peer_address(addr, rank, loc=None, ip=None):
    """The shared::cluster address of CTA `rank`'s copy of this CTA's shared address `addr`."""
    return Uint32(
        llvm.inline_asm(
            T.i32(), [Uint32(addr).ir_value(loc=loc, ip=ip), Uint32(rank).ir_value(loc=loc, ip=ip)],
            "mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r",
        )
    )


@dsl_user_op
def st_async_v4(addr, words, mbar, loc=None, ip=None):
    """16 bytes (four 32-bit words) to shared::cluster address `addr`; their arrival counts as 16
    transaction bytes on the mbarrier at shared::cluster address `mbar` (in the same CTA as `addr`)."""
    ops = [Uint32(addr).ir_value(loc=loc, ip=ip)] + [Uint32(w).ir_value(loc=loc, ip=ip) for w in words]
    ops.append(Uint32(mbar).ir_value(loc=loc, ip=ip))
    llvm.inline_asm(
        None, ops, "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [$0], {$1, $2, $3, $4}, [$5];",
        "r,r,r,r,r,r,~{memory}", has_side_effects=True,
    )


@dsl_user_op
def st_async_b32(addr, word, mbar, loc=None, ip=None):
    """One 32-bit word, as st_async_v4 (4 transaction bytes)."""
    llvm.inline_asm(
        None, [Uint32(addr).ir_value(loc=loc, ip=ip), Uint32(word).ir_value(loc=loc, ip=ip), Uint32(mbar).ir_value(loc=loc, ip=ip)],
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [$0], $1, [$2];", "r,r,r,~{memory}", has_side_effects=True,
    )
