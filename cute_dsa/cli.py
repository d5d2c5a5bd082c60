"""`python -m cute_dsa` / `cute-dsa`: demo, compile, bench, ablate, tune, precompile."""

from __future__ import annotations

import argparse
import os
import sys
import time


def _has_hopper() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def cmd_demo(args) -> int:
    import torch

    if not _has_hopper():
        os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    from . import dsa_decode
    from .compile import build_decode, build_resolve
    from .checks import DecodeProblem
    from .config_select import choice_for
    from .heuristics import NUM_SMS_H200, resolve_table_slots
    from .kernel_config import DecodeVariant
    from .reference import masked_attention
    from .testing import make_inputs, relative_error

    rows, heads, width = args.batch, args.heads, args.width
    print(f"GLM-5.3-shaped decode: {rows} rows x {heads} heads, width {width}, page 64, context {args.context}")
    dev = "cuda" if _has_hopper() else "cpu"
    inp = make_inputs(rows, heads, width, context=args.context, seed=0, device=dev, k_scale=0.9, v_scale=1.1)
    t = time.time()
    ref_o, ref_l = masked_attention(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale)
    print(f"oracle (dense masked, float64, {dev}): {time.time() - t:.2f} s, |out| = {ref_o.norm():.3f}")
    if dev == "cpu":
        t = time.time()
        # The config an H200 would run for this shape (its tuned table, else the heuristic).
        problem = DecodeProblem(rows, heads, width, inp.kv_cache.shape[0], inp.kv_cache.shape[1], inp.kv_cache.shape[2],
                                False, False, flat_cache=True)
        cfg = choice_for(problem, "NVIDIA H200", NUM_SMS_H200).config
        build_resolve(resolve_table_slots(width))
        for split in (False, True):
            build_decode(DecodeVariant(cfg, split=split, write_lse=True, k_scale_on_device=False,
                                       v_scale_on_device=False, flat_cache=True))
        print(f"compiled the decode kernels ({cfg.label()}, the H200 choice for this shape) for sm_90a in {time.time() - t:.1f} s")
        print("No Hopper GPU here: launching the kernel needs an sm_90 GPU (H100/H200). Oracle and compile done.")
        return 0
    out, lse = dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale)
    torch.cuda.synchronize()
    err = relative_error(out, ref_o)
    print(f"kernel vs oracle: relative error {err:.2e} (tolerance 5e-3)")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(10):
        dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, out=out, lse=lse)
    times = []
    for _ in range(50):
        start.record()
        dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, out=out, lse=lse)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    times.sort()
    print(f"decode: median {times[len(times) // 2]:.1f} us over 50 calls (L2 warm)")
    return 0 if err <= 5e-3 else 1


def cmd_compile(args) -> int:
    os.environ["CUTE_DSL_ARCH"] = args.arch
    from .variants import all_variants, check_ptx

    bad = 0
    for v in all_variants():
        t = time.time()
        v.build(dump=(args.dump, v.name))
        ptx = open(os.path.join(args.dump, v.name + ".ptx")).read()
        problems = check_ptx(v.kind, ptx)
        bad += bool(problems)
        print(f"{v.name:60s} {time.time() - t:5.1f} s  {'OK' if not problems else problems}", flush=True)
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="cute-dsa")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="decode a GLM-5.3-shaped problem, check it against the oracle, time it")
    d.add_argument("--batch", type=int, default=4)
    d.add_argument("--heads", type=int, default=64)
    d.add_argument("--width", type=int, default=2176)
    d.add_argument("--context", type=int, default=8192)
    d.set_defaults(fn=cmd_demo)
    c = sub.add_parser("compile", help="compile every kernel variant and write its PTX")
    c.add_argument("--arch", default="sm_90a")
    c.add_argument("--dump", default="ptx")
    c.set_defaults(fn=cmd_compile)
    from .ablation import add_parser as add_ablate
    from .bench import add_parser as add_bench
    from .precompile import add_parser as add_precompile
    from .tune import add_parser as add_tune

    add_bench(sub)
    add_ablate(sub)
    add_tune(sub)
    add_precompile(sub)
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for commands that re-launch themselves
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
