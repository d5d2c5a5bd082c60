"""Host time of `dsa_decode`'s argument checks and of the rest of its host path, on the CPU.

    python benchmarks/host_checks.py

The checks end with the device check, so CPU tensors time all of them (the call then raises).
For the whole host path the harness pretends tensors are on CUDA and replaces the compiled
launches with no-ops: what is left is validation, the plan lookup, scratch and views. The
launches themselves (TVM-FFI) need a GPU: `cute-dsa bench` reports the whole call's `host µs`.
"""

import dataclasses
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cute_dsa  # noqa: E402
from cute_dsa import api  # noqa: E402
from cute_dsa.checks import check_decode_args  # noqa: E402
from cute_dsa.kernel_config import DecodeKernelConfig  # noqa: E402
from cute_dsa.testing import make_inputs  # noqa: E402


def best_us(fn, n=20000, reps=3) -> float:
    for _ in range(2000):
        fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def main() -> None:
    inp = make_inputs(128, 64, 2048, block_size=64, context=4096, seed=0)
    out = torch.empty(128, 64, 512, dtype=torch.bfloat16)
    lse = torch.empty(128, 64)

    def checks():
        try:
            check_decode_args(*inp.args(), k_scale=1.0, v_scale=1.0, softmax_scale=None, index_kpool=1, out=out, lse=lse)
        except ValueError:  # the device check, last
            pass

    print(f"check_decode_args (to the device check): {best_us(checks):.2f} us")

    torch.Tensor.is_cuda = property(lambda self: True)  # this process only: pass the device check
    cfg = DecodeKernelConfig()
    noop = lambda *a: None  # noqa: E731
    for splits in (1, 4):
        kw = dict(config=cfg, num_splits=splits, fuse_resolve=False)
        try:
            cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse, **kw)  # builds the plan (compiles), then fails to launch
        except Exception:
            pass
        for key, plan in list(api._plans.items()):
            api._plans[key] = dataclasses.replace(plan, resolve=plan.resolve and noop, decode=noop,
                                                  combine=plan.combine and noop)
        ws = torch.empty(cute_dsa.decode_workspace_bytes(*inp.args(), **kw), dtype=torch.uint8)
        t_alloc = best_us(lambda: cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse, **kw), n=5000)
        t_ws = best_us(lambda: cute_dsa.dsa_decode(*inp.args(), out=out, lse=lse, workspace=ws, **kw), n=5000)
        print(f"dsa_decode without launches, {splits} split(s), out/lse given: {t_alloc:.2f} us "
              f"(scratch allocated on the CPU), {t_ws:.2f} us (workspace)")


if __name__ == "__main__":
    main()
