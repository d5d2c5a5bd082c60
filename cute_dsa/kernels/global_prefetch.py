"""An L2 prefetch of a span of global memory that holds no register until it lands (sm_90
`cp.async.bulk.prefetch.L2`): the producer names the rows it will load a window later."""

from __future__ import annotations

from cutlass import Int64
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import dsl_user_op


@dsl_user_op
def prefetch_l2(addr, size: int, loc=None, ip=None):
    """Ask L2 for the `size` bytes (a multiple of 16) at 16-byte-aligned global address `addr`."""
    assert size % 16 == 0
    llvm.inline_asm(
        None, [Int64(addr).ir_value(loc=loc, ip=ip)], f"cp.async.bulk.prefetch.L2.global [$0], {size};", "l",
        has_side_effects=True,
    )
