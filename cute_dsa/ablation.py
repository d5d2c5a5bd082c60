"""`cute-dsa ablate`: where the time of one decode goes, kernel by kernel and stage by stage.

For each shape it times (L2 flushed before every call, median; CUDA events, or CUDA-graph replay
with `--graph`) the whole call, the three launches of `dsa_decode` on their own (resolve, decode,
combine) and the decode + combine without the resolve launch (what a decode that resolved its own
ids could at best reach), then the decode kernel again with one stage dropped (no global gather,
no id loads, no FP8 conversion, no wgmma). A stage whose removal saves little is not what bounds
the kernel. The dropped variants compute garbage: they are timed, never checked.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Dict

import torch

from . import compile as kc
from .bench import SOFTMAX_SCALE, parse_config
from .bench_inputs import make_bench_problem
from .checks import check_decode_args
from .api import cache_operand, can_stream_resolve, dsa_decode, launch_plan
from .grid_args import add_grid_args, int_list
from .heuristics import resolve_table_slots
from .model_config import KV_LORA_RANK
from .timing import L2Flusher, time_cold, time_graph

DROPS = ("gather", "ids", "convert", "mma")


def stage_times(batch: int, heads: int, width: int, flush: L2Flusher, args) -> Dict[str, float]:
    p = make_bench_problem(batch, heads, width, context=args.context, page=args.page, seed=batch + heads + width)
    inp = p.inputs
    dev = inp.q.device
    problem = check_decode_args(
        *inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=None, index_kpool=1, out=None, lse=None
    )
    # The launch dsa_decode would make (tuned, or the forced config with its automatic splits).
    cfg = parse_config(args.config) if args.config else None
    plan = launch_plan(problem, dev, cfg, args.splits, True, fuse_resolve=args.fuse)
    # The same decode with a separate resolve launch (ids resolved once, outside the timings).
    unfused = replace(plan.variant, fused_resolve=False, stream_resolve=False)
    resolve = kc.resolve_kernel(resolve_table_slots(width))
    splits, seg = plan.splits, plan.split_len
    cache = cache_operand(inp.kv_cache, problem)
    phys = torch.empty_like(inp.indices)
    rows = inp.q.shape[0]
    if splits > 1:
        o = torch.empty(rows, splits, heads, KV_LORA_RANK, dtype=torch.float32, device=dev)
        lse = torch.empty(rows, splits, heads, dtype=torch.float32, device=dev)
    else:
        o = torch.empty(rows, heads, KV_LORA_RANK, dtype=torch.bfloat16, device=dev)
        lse = torch.empty(rows, heads, dtype=torch.float32, device=dev)
    out = torch.empty(rows, heads, KV_LORA_RANK, dtype=torch.bfloat16, device=dev)
    out_lse = torch.empty(rows, heads, dtype=torch.float32, device=dev)

    def res():
        resolve(inp.indices, inp.seq_lens, inp.block_table, phys, problem.block_size, problem.num_blocks)

    def dec(drop: str = "", variant=unfused):
        k = kc.decode_kernel(replace(variant, drop=drop))
        ids = (inp.indices, inp.seq_lens, inp.block_table)
        return lambda: k(inp.q, cache, phys, *ids, inp.k_scale, inp.v_scale, SOFTMAX_SCALE, o, lse, seg, splits,
                         problem.block_size, problem.num_blocks)

    def timed(fn) -> float:
        if args.graph:
            return time_graph(fn, flush)
        return time_cold(fn, flush, iters=args.iters)

    def call(fuse=args.fuse):
        dsa_decode(*inp.args(), k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE,
                   config=cfg, num_splits=args.splits, out=out, lse=out_lse, fuse_resolve=fuse)

    def comb():
        plan.combine(o, lse, out, out_lse)

    res()
    decode = dec()
    times = {"splits": float(splits), "call": timed(call), "resolve": timed(res), "decode": timed(decode)}
    slice_fits = seg <= plan.variant.config.fused_resolve_max_split()
    stream_fits = can_stream_resolve(problem, plan.variant.config)
    if slice_fits or stream_fits:
        times["call unfused"] = timed(lambda: call(False))
    if slice_fits:
        times["call fused"] = timed(lambda: call(True))
        times["decode fused"] = timed(dec(variant=replace(unfused, fused_resolve=True)))
    if stream_fits:
        times["call stream"] = timed(lambda: call("stream"))
        times["decode stream"] = timed(dec(variant=replace(unfused, stream_resolve=True)))
    if splits > 1:
        times["combine"] = timed(comb)
        times["dec+comb"] = timed(lambda: (decode(), comb()))
    else:
        times["dec+comb"] = times["decode"]
    for d in args.drop_list:
        times[f"-{d}"] = timed(dec(d))
    return times


def run(args) -> int:
    if not torch.cuda.is_available():
        print("ablate needs a CUDA GPU (Hopper sm_90); none is visible", file=sys.stderr)
        return 2
    flush = L2Flusher(torch.device("cuda"))
    args.drop_list = [d for d in (args.drops.split(",") if args.drops else ()) if d]
    bad = [d for d in args.drop_list if d not in DROPS]
    if bad:
        raise SystemExit(f"--drops: unknown stage(s) {bad}; expected a comma list of {', '.join(DROPS)}")
    cols = ["splits", "call", "call fused", "call stream", "call unfused", "resolve", "decode", "decode fused", "decode stream", "combine", "dec+comb"] + [f"-{d}" for d in args.drop_list]
    print(f"timing: {'CUDA-graph replay' if args.graph else 'CUDA events'}, L2 flushed, median")
    print("| B | H | W | " + " | ".join(c if c == "splits" else c + " µs" for c in cols) + " |")
    print("|" + "---|" * (3 + len(cols)))
    for w in int_list(args.width, (2048,)):
        for h in int_list(args.heads, (16, 64, 128)):
            for b in int_list(args.batch, (1, 8, 64, 128)):
                t = stage_times(b, h, w, flush, args)
                cells = [f"{t[c]:.0f}" if c == "splits" else (f"{t[c]:.1f}" if c in t else "-") for c in cols]
                print(f"| {b} | {h} | {w} | " + " | ".join(cells) + " |", flush=True)
                torch.cuda.empty_cache()
    return 0


def add_parser(sub) -> None:
    a = sub.add_parser("ablate", help="time each launch and the decode with one stage dropped (GPU)")
    add_grid_args(a, batch=(1, 8, 64, 128), heads=(16, 64, 128), width=(2048,))
    a.add_argument("--context", type=int, default=32768)
    a.add_argument("--page", type=int, default=64)
    a.add_argument("--iters", type=int, default=20)
    a.add_argument("--drops", default=",".join(DROPS), help=f"stages to drop, one variant each (default {','.join(DROPS)}; '' for none)")
    a.add_argument("--splits", type=int, help="force the split count (default: the tuned or automatic one)")
    a.add_argument("--fuse", type=lambda v: {"auto": None, "on": True, "off": False, "slice": "slice", "stream": "stream"}[v],
                   default=None, metavar="{auto,on,off,slice,stream}",
                   help="the decode resolves its own ids: by split length (auto), always (on), never (off), or forced "
                        "up front (slice) or window by window (stream)")
    a.add_argument("--graph", action="store_true", help="time by CUDA-graph replay (no launch gaps) instead of events")
    a.add_argument("--config", help="force a kernel config, e.g. chunk_tokens=16,stages=6")
    a.set_defaults(fn=run)
