"""`cute-dsa precompile`: fill the persistent kernel cache (kernel_cache.py) with every kernel that
`dsa_decode` launches for a grid of shapes on a named GPU, on a machine without one.

An engine runs it once per release and ships or mounts the directory; a fresh GPU machine then
loads each kernel instead of compiling it (`CUTE_DSA_KERNEL_CACHE=DIR`). The shapes default to the
benchmark grid (its cache geometry: 32k-token contexts, page 64, FlashMLA's 528-byte tokens).
`--keys-from DIR` adds every kernel a run recorded in a cache directory (the GPU tests' explicit
configs, say), rebuilt for the current sources.
"""

from __future__ import annotations

import os
import time

from . import compile as kc
from . import kernel_cache
from .grid_args import add_grid_args, int_list
from .heuristics import NUM_SMS_H200


def run(args) -> int:
    os.environ[kernel_cache.CACHE_ENV] = args.cache_dir
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    from .api import launch_spec, spec_kernels
    from .bench import BATCHES, HEADS, WIDTHS, parse_config
    from .bench_inputs import bench_decode_problem

    gpu = (args.gpu, args.sms)
    configs = [None] + [parse_config(text) for text in args.config]  # None: the tuned choice
    specs = {}
    for w in int_list(args.width, WIDTHS) if args.grid else ():
        for h in int_list(args.heads, HEADS):
            for b in int_list(args.batch, BATCHES):
                problem = bench_decode_problem(b, h, w, context=args.context, page=args.page)
                for physical in (False, True) if args.physical else (False,):
                    for cfg in configs:
                        for fuse in (None,) + (() if physical else tuple(args.fuse)):
                            try:
                                spec = launch_spec(problem, gpu, cfg, None, write_lse=True, fuse_resolve=fuse, physical=physical)
                            except ValueError:  # --fuse where that config cannot resolve so: nothing to build
                                continue
                            specs.setdefault(spec, f"B={b} H={h} W={w}" + (" phys" if physical else f" {fuse}" if fuse else ""))
    print(f"{len(specs)} launch specs for {gpu[0]} ({gpu[1]} SMs) -> {args.cache_dir}", flush=True)
    t0 = time.time()
    for i, (spec, shape) in enumerate(specs.items()):
        t = time.time()
        spec_kernels(spec)
        print(f"[{i + 1}/{len(specs)}] {shape:22s} {spec.variant.config.label():32s} x{spec.splits:<3d} {time.time() - t:5.1f} s", flush=True)
    keys = [k for d in args.keys_from for k in kernel_cache.keys_in(d)]
    if keys:
        print(f"{len(keys)} kernels recorded in {', '.join(args.keys_from)}", flush=True)
    for i, key in enumerate(keys):
        t = time.time()
        kc.kernel_for_key(key)
        print(f"[{i + 1}/{len(keys)}] {kernel_cache.entry_name(key)} {time.time() - t:5.1f} s", flush=True)
    s = kernel_cache.stats
    print(f"done in {time.time() - t0:.0f} s: {s['built']} compiled, {s['loaded']} already cached", flush=True)
    return 0


def add_parser(sub) -> None:
    from .bench import BATCHES, HEADS, WIDTHS

    p = sub.add_parser("precompile", help="compile the kernels of a shape grid into a kernel cache directory (no GPU needed)")
    p.add_argument("--cache-dir", required=True, help="the directory; use it with CUTE_DSA_KERNEL_CACHE=DIR")
    p.add_argument("--gpu", default="NVIDIA H200", help="the GPU name whose tuning table picks the configs")
    p.add_argument("--sms", type=int, default=NUM_SMS_H200, help=f"its SM count (default {NUM_SMS_H200}: H100 SXM and H200)")
    add_grid_args(p, batch=BATCHES, heads=HEADS, width=WIDTHS)
    p.add_argument("--context", type=int, default=32768)
    p.add_argument("--page", type=int, default=64)
    p.add_argument("--no-physical", dest="physical", action="store_false", help="skip the physical-id kernels")
    p.add_argument("--keys-from", action="append", default=[], metavar="DIR",
                   help="also every kernel recorded in that cache directory (its .key files; e.g. one a GPU run "
                        "brought back), rebuilt for the current sources; repeatable")
    p.add_argument("--config", action="append", default=[], metavar="TEXT",
                   help="also every grid shape with this forced config, as `bench --config TEXT`; repeatable")
    p.add_argument("--fuse", action="append", default=[], choices=("stream", "slice"),
                   help="also the kernels of `fuse_resolve=MODE` calls (as `ablate --fuse`) where the config allows it; repeatable")
    p.add_argument("--no-grid", dest="grid", action="store_false", help="only the --keys-from kernels")
    p.set_defaults(fn=run)
