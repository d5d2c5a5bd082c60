"""`cute-dsa bench`: ours vs FlashMLA vs a torch gather+matmul, side by side, on one GPU.

Every kernel's result is checked against the float64 oracle (first and last row) before it is
timed. Times are medians of CUDA-event-timed calls with the L2 flushed before each call; ours
also gets a CUDA-graph replay figure (launch gaps removed, L2 still flushed).
"""

from __future__ import annotations

import json
import os
import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional

import torch

from . import kernel_cache
from .bench_inputs import BenchProblem, make_bench_problem
from .grid_args import add_grid_args, int_list
from .kernel_config import DecodeKernelConfig
from .model_config import KV_LORA_RANK
from .peers import flashmla_available, setup_flashmla, setup_torch
from .reference import masked_attention
from .testing import relative_error
from .timing import Ceilings, L2Flusher, measure_ceilings, time_cold, time_graph, time_host

BATCHES = (1, 2, 8, 32, 64, 128, 256)
HEADS = (8, 16, 32, 64, 128)
WIDTHS = (2048, 2176)
REL_TOL = 5e-3
SOFTMAX_SCALE = KV_LORA_RANK ** -0.5


@dataclass
class Row:
    batch: int
    heads: int
    width: int
    ours_us: float
    ours_graph_us: float
    ours_host_us: float  # host time to enqueue one eager call (validation + launches)
    ours_err: float
    roofline_us: float
    tbps: float
    tflops: float
    roof_frac: float
    flashmla_us: Optional[float] = None
    flashmla_err: Optional[float] = None
    flashmla_roof_frac: Optional[float] = None
    flashmla_graph_us: Optional[float] = None
    flashmla_host_us: Optional[float] = None
    torch_us: Optional[float] = None
    ratio: Optional[float] = None  # FlashMLA µs / ours µs (eager calls: includes host-bound launch gaps at small batch)
    ratio_graph: Optional[float] = None  # the same with CUDA-graph replays: the kernel-side comparison
    # Ours on FlashMLA's own input, the physical ids (physical_indices=True: no resolve).
    phys_us: Optional[float] = None
    phys_graph_us: Optional[float] = None
    phys_err: Optional[float] = None
    ratio_phys: Optional[float] = None
    ratio_phys_graph: Optional[float] = None
    heuristic_us: Optional[float] = None  # ours with the analytical choice instead of the tuned one
    heuristic_graph_us: Optional[float] = None
    choice: str = ""
    splits: int = 0
    config: Dict = field(default_factory=dict)


def latent_bytes(p: BenchProblem) -> int:
    return p.valid_tokens * KV_LORA_RANK


def flops(p: BenchProblem) -> int:
    return 4 * KV_LORA_RANK * p.valid_tokens * p.inputs.q.shape[1]


def roofline_us(p: BenchProblem, c: Ceilings) -> float:
    return max(latent_bytes(p) / (c.copy_tbps * 1e6), flops(p) / (c.bf16_tflops * 1e6))


def check_rows(call: Callable, p: BenchProblem) -> float:
    """Relative error of `call()` against the oracle on the first and last row."""
    out = call()[0]
    inp = p.inputs
    sel = torch.tensor(sorted({0, inp.q.shape[0] - 1}), device=inp.q.device)
    ref, _ = masked_attention(
        inp.q[sel], inp.kv_cache, inp.block_table[sel], inp.seq_lens[sel], inp.indices[sel],
        k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE,
    )
    return relative_error(out[sel].float(), ref)


def ours_call(p: BenchProblem, config: Optional[DecodeKernelConfig] = None, num_splits: Optional[int] = None,
              physical: bool = False):
    """Our call on the logical ids, or (`physical`) on the physical ids FlashMLA gets."""
    from .api import dsa_decode

    inp = p.inputs
    ids = p.phys if physical else inp.indices
    rows, heads, _ = inp.q.shape
    out = torch.empty(rows, heads, KV_LORA_RANK, dtype=torch.bfloat16, device=inp.q.device)
    lse = torch.empty(rows, heads, dtype=torch.float32, device=inp.q.device)

    def call():
        return dsa_decode(
            inp.q, inp.kv_cache, inp.block_table, inp.seq_lens, ids, k_scale=inp.k_scale, v_scale=inp.v_scale,
            softmax_scale=SOFTMAX_SCALE, out=out, lse=lse, config=config, num_splits=num_splits, physical_indices=physical,
        )

    return call


def bench_shape(batch: int, heads: int, width: int, ceil: Ceilings, flush: L2Flusher, args) -> Row:
    from .checks import check_decode_args
    from .config_select import LaunchChoice, device_info, heuristic_choice, select_launch
    from .heuristics import choose_splits

    p = make_bench_problem(batch, heads, width, context=args.context, page=args.page, seed=batch * 7 + heads + width)
    forced = parse_config(args.config) if args.config else None
    mine = ours_call(p, forced)
    err = check_rows(mine, p)
    if not err <= REL_TOL:
        raise RuntimeError(f"B={batch} H={heads} W={width}: ours differs from the oracle (rel err {err:.3e})")
    us = time_cold(mine, flush, iters=args.iters)
    g_us = time_graph(mine, flush)
    host_us = time_host(mine)
    roof = roofline_us(p, ceil)
    problem = check_decode_args(
        *p.inputs.args(), k_scale=1.0, v_scale=1.0, softmax_scale=None, index_kpool=1, out=None, lse=None
    )
    sms = device_info(p.inputs.q.device)[1]
    choice = select_launch(problem, p.inputs.q.device)
    if forced is not None:  # what dsa_decode does with config= and no num_splits
        choice = LaunchChoice(forced, choose_splits(problem, forced, sms), f"forced {args.config}")
    row = Row(
        batch, heads, width, ours_us=us, ours_graph_us=g_us, ours_host_us=host_us, ours_err=err, roofline_us=roof,
        tbps=latent_bytes(p) / us / 1e6, tflops=flops(p) / us / 1e6, roof_frac=roof / us,
        choice=choice.source, splits=choice.splits, config=choice.config.to_dict(),
    )
    if args.physical:
        ph = ours_call(p, forced, physical=True)
        row.phys_err = check_rows(ph, p)
        if not row.phys_err <= REL_TOL:
            raise RuntimeError(f"B={batch} H={heads} W={width}: ours on physical ids differs from the oracle (rel err {row.phys_err:.3e})")
        row.phys_us = time_cold(ph, flush, iters=args.iters)
        row.phys_graph_us = time_graph(ph, flush)
    if args.heuristic:
        h = heuristic_choice(problem, sms)
        h_call = ours_call(p, h.config, h.splits)
        row.heuristic_us = time_cold(h_call, flush, iters=args.iters)
        row.heuristic_graph_us = time_graph(h_call, flush)
    if args.flashmla and heads <= 128:
        fm = setup_flashmla(p, SOFTMAX_SCALE)
        row.flashmla_err = check_rows(fm, p)
        row.flashmla_us = time_cold(fm, flush, iters=args.iters)
        row.flashmla_roof_frac = roof / row.flashmla_us
        row.flashmla_graph_us = time_graph(fm, flush)
        row.flashmla_host_us = time_host(fm)
        row.ratio = row.flashmla_us / us
        row.ratio_graph = row.flashmla_graph_us / g_us
        if row.phys_us:
            row.ratio_phys = row.flashmla_us / row.phys_us
            row.ratio_phys_graph = row.flashmla_graph_us / row.phys_graph_us
    if args.torch:
        row.torch_us = time_cold(setup_torch(p, SOFTMAX_SCALE), flush, iters=max(5, args.iters // 3))
    del p
    torch.cuda.empty_cache()
    return row


def parse_config(text: str) -> DecodeKernelConfig:
    """'chunk_tokens=16,stages=6,overlap=false' -> DecodeKernelConfig (other fields default)."""
    fields = {}
    for item in text.split(","):
        k, _, v = item.partition("=")
        fields[k.strip()] = {"true": True, "false": False}.get(v.strip().lower(), int(v) if v.strip().isdigit() else v.strip())
    return DecodeKernelConfig.from_dict(fields).validate()


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


COLUMNS = [
    ("B", "batch", "d"), ("H", "heads", "d"), ("W", "width", "d"),
    ("ours µs", "ours_us", ".1f"), ("graph µs", "ours_graph_us", ".1f"), ("host µs", "ours_host_us", ".0f"),
    ("TB/s", "tbps", ".2f"), ("TFLOP/s", "tflops", ".0f"), ("roof", "roof_frac", ".0%"),
    ("FlashMLA µs", "flashmla_us", ".1f"), ("FM graph µs", "flashmla_graph_us", ".1f"), ("FM host µs", "flashmla_host_us", ".0f"),
    ("FM roof", "flashmla_roof_frac", ".0%"), ("torch µs", "torch_us", ".0f"), ("FM/ours", "ratio", ".2f"), ("FM/ours graph", "ratio_graph", ".2f"),
    ("phys µs", "phys_us", ".1f"), ("phys graph µs", "phys_graph_us", ".1f"), ("FM/phys graph", "ratio_phys_graph", ".2f"),
    ("heur. graph µs", "heuristic_graph_us", ".1f"), ("splits", "splits", "d"), ("err", "ours_err", ".1e"),
]


def format_table(rows: List[Row]) -> str:
    cells = [[c[0] for c in COLUMNS]] + [[_fmt(getattr(r, k), s) for _, k, s in COLUMNS] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    lines = ["| " + " | ".join(c.rjust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _git_commit() -> str:
    if os.environ.get("CUTE_DSA_COMMIT"):  # a copied working tree can carry a stale .git
        return os.environ["CUTE_DSA_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def run(args) -> int:
    if not torch.cuda.is_available():
        print("bench needs a CUDA GPU (Hopper sm_90); none is visible", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    fm_reason = flashmla_available()
    args.flashmla = args.flashmla and fm_reason is None
    ceil = measure_ceilings(dev)
    name = torch.cuda.get_device_name()
    print(f"{name}, {torch.cuda.get_device_properties(dev).multi_processor_count} SMs; commit {_git_commit()}")
    print(f"ceilings (measured now): copy {ceil.copy_tbps:.2f} TB/s, bf16 matmul {ceil.bf16_tflops:.0f} TFLOP/s")
    print(f"FlashMLA: {'yes' if args.flashmla else fm_reason or 'disabled'}; context {args.context}, page {args.page}")
    shapes = [(b, h, w) for w in int_list(args.width, WIDTHS) for h in int_list(args.heads, HEADS) for b in int_list(args.batch, BATCHES)]
    rows: List[Row] = []
    t0 = time.time()
    for i, (b, h, w) in enumerate(shapes):
        r = bench_shape(b, h, w, ceil, flush_for(dev), args)
        rows.append(r)
        if args.json:  # after every shape, so a run cut short still leaves its rows
            with open(args.json, "w") as f:
                json.dump({"gpu": name, "commit": _git_commit(), "ceilings": asdict(ceil), "context": args.context,
                           "page": args.page, "rows": [asdict(x) for x in rows]}, f, indent=1)
        eta = (time.time() - t0) / (i + 1) * (len(shapes) - i - 1)
        print(f"[{i + 1}/{len(shapes)} eta {eta:4.0f}s] B={b} H={h} W={w}: ours {r.ours_us:.1f} µs"
              f" (graph {r.ours_graph_us:.1f}), FlashMLA {_fmt(r.flashmla_us, '.1f')} µs, ratio {_fmt(r.ratio, '.2f')}",
              file=sys.stderr, flush=True)
    print(format_table(rows))
    summarize("FlashMLA/ours", [r.ratio for r in rows if r.ratio])
    summarize("FlashMLA/ours (graph replay)", [r.ratio_graph for r in rows if r.ratio_graph])
    summarize("FlashMLA/ours on physical ids", [r.ratio_phys for r in rows if r.ratio_phys])
    summarize("FlashMLA/ours on physical ids (graph replay)", [r.ratio_phys_graph for r in rows if r.ratio_phys_graph])
    summarize("heuristic/tuned (graph replay)", [r.heuristic_graph_us / r.ours_graph_us for r in rows if r.heuristic_graph_us])
    if kernel_cache.cache_dir() is not None:
        s = kernel_cache.stats
        print(f"kernel cache {kernel_cache.cache_dir()}: {s['loaded']} kernels loaded, {s['built']} compiled")
    return 0


def summarize(what: str, ratios: List[float]) -> None:
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"{what}: geomean {geo:.2f}x, min {min(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} shapes")


_flushers: Dict[str, L2Flusher] = {}


def flush_for(dev) -> L2Flusher:
    key = str(dev)
    if key not in _flushers:
        _flushers[key] = L2Flusher(dev)
    return _flushers[key]


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="time ours vs FlashMLA vs torch over a grid of shapes (GPU)")
    add_grid_args(b, batch=BATCHES, heads=HEADS, width=WIDTHS)
    b.add_argument("--context", type=int, default=32768)
    b.add_argument("--page", type=int, default=64)
    b.add_argument("--iters", type=int, default=30)
    b.add_argument("--no-flashmla", dest="flashmla", action="store_false")
    b.add_argument("--no-torch", dest="torch", action="store_false")
    b.add_argument("--config", help="force a kernel config, e.g. chunk_tokens=16,stages=6,overlap=false")
    b.add_argument("--no-physical", dest="physical", action="store_false",
                   help="skip ours on FlashMLA's physical ids (physical_indices=True)")
    b.add_argument("--heuristic", action="store_true", help="also time the analytical choice (vs the tuned one)")
    b.add_argument("--json", help="write every figure to this file")
    b.set_defaults(fn=run)
