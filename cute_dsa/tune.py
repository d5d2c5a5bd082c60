"""`cute-dsa tune`: measure every valid launch choice on a grid of shape buckets and store the
winners as `tuning/<GPU>.yaml`.

For each shape: build one benchmark problem, compute the oracle once (first and last row), then
for each candidate (kernel config x split count) check the result against it and time a CUDA
graph of L2-flush + decode replays (median). A candidate that fails to compile, launch or match
the oracle is recorded with its error and skipped. Every measurement is appended to a progress
file as it is taken, so an interrupted run resumes where it stopped.

A candidate can also hang the GPU (a pipeline deadlock) or kill the CUDA context, which no
exception handler survives. So the sweep runs in a worker process under a watchdog: the worker
names the candidate it is about to measure in `<progress>.current`; when that name has not changed
for `--watchdog` seconds, or the worker dies, the candidate is recorded as failed, the worker is
killed and a new one resumes from the progress file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, Optional, Tuple

from .grid_args import add_grid_args, int_list
from .heuristics import NUM_SMS_H200, tokens_m_tile
from .kernel_config import CONVERTS, TOKENS_M_HEAD_TILES, DecodeKernelConfig
from .tuning_table import Choice, Entry, ShapeKey, TuningTable, gpu_file_name

BATCHES = (1, 2, 8, 32, 64, 128, 256)
HEADS = (8, 16, 32, 64, 128)
WIDTHS = (2048,)  # 2176 is 0.09 octaves away: it takes the 2048 bucket
PAGES = (64,)
CHUNKS = (16, 32)
STAGES = (2, 4, 8)
KV_BUFFERS = (2, 3)
OVERLAP = (True, False)
# q_in_regs is left out: with 16-token chunks (with 32 the producer spills) it was 10-25% slower
# than the default at B >= 64 on the H200 (benchmarks/gpu-tests.md, 2026-12-03).
Q_IN_REGS = (False,)
ID_WINDOWS = (0, 128)
# Ring stages of the tokens-as-M kernel by who converts: 32-token stages (producer, consumer) or
# 64-token ring slots, two or three per consumer (registers; three take id_window=0).
TOKENS_M_STAGES = {"producer": (2, 3, 4), "consumer": (4,), "registers": (4, 6)}
# Heads as M with the ld_global producer (no raw ring) and/or one scoring consumer:
# (chunk, register sets / ring stages, K/V buffers, gather, scores, overlap), each with both id windows.
# 48-token tiles are the largest of which three fit next to Q (no raw ring, no score exchange).
HEADS_M_LOADS = [(32, 2, kv, "ld_global", "split", ov) for kv in (2, 3) for ov in (False, True)]
HEADS_M_LOADS += [(n, st, kv, "ld_global", "one", ov) for n, kv in ((48, 3), (64, 2)) for st in (3, 4) for ov in (False, True)]
HEADS_M_LOADS += [(32, 2, kv, "ld_global", "one", ov) for kv in (2, 3) for ov in (False, True)]
HEADS_M_LOADS += [(32, st, 2, "cp_async", "one", ov) for st in (2, 4) for ov in (False, True)]
# Two head tiles sharing the gather (pair): 64-token tiles, 2 or 3 register sets.
HEADS_M_PAIRS = [(2, False), (3, False), (2, True)]
# The next id window's rows prefetched into L2: the 64-token register gather (sets, overlap, pair),
# and tokens as M with each way of converting (converter, ring stages, release_early), id window 128.
HEADS_M_L2_PREFETCH = [(st, ov, False) for st in (3, 4) for ov in (False, True)] + [(3, False, True)]
TOKENS_M_L2_PREFETCH = [("producer", 2, False), ("producer", 3, False), ("consumer", 4, False), ("registers", 4, True)]
SPLITS = (1, 2, 4, 8, 16, 32, 64)
MAX_WAVES = 2  # one decode CTA per SM: beyond two waves a split only adds combine traffic


def config_space() -> Tuple[List[DecodeKernelConfig], List[Tuple[DecodeKernelConfig, str]]]:
    """(valid configs, [(pruned config, why)]): configs that cannot fit an SM are pruned here."""
    candidates = [DecodeKernelConfig(chunk_tokens=n, stages=st, kv_buffers=kv, overlap=ov, q_in_regs=qr, id_window=w)
                  for n, st, kv, ov, qr, w in itertools.product(CHUNKS, STAGES, KV_BUFFERS, OVERLAP, Q_IN_REGS, ID_WINDOWS)]
    candidates += [DecodeKernelConfig(chunk_tokens=n, stages=st, kv_buffers=kv, gather=g, scores=sc, overlap=ov, id_window=w)
                   for (n, st, kv, g, sc, ov), w in itertools.product(HEADS_M_LOADS, ID_WINDOWS)]
    candidates += [DecodeKernelConfig(chunk_tokens=64, stages=st, gather="ld_global", scores="one", overlap=ov, pair=True)
                   for st, ov in HEADS_M_PAIRS]
    candidates += [DecodeKernelConfig(chunk_tokens=64, stages=st, gather="ld_global", scores="one", overlap=ov, pair=p, l2_prefetch=True)
                   for st, ov, p in HEADS_M_L2_PREFETCH]
    candidates += [DecodeKernelConfig(tiling="tokens_m", head_tile=t, chunk_tokens=64, stages=st, convert=cv, release_early=re, l2_prefetch=True)
                   for t in TOKENS_M_HEAD_TILES for cv, st, re in TOKENS_M_L2_PREFETCH if not (re and t > 16)]
    tokens_m = [(t, cv, w, st) for t, cv, w in itertools.product(TOKENS_M_HEAD_TILES, CONVERTS, ID_WINDOWS)
                for st in TOKENS_M_STAGES[cv] if not (cv == "registers" and st == 6 and w)]  # 6 slots: w0 only
    for t, cv, w, st in tokens_m:
        cfg = DecodeKernelConfig(tiling="tokens_m", head_tile=t, chunk_tokens=64, stages=st, id_window=w, convert=cv)
        candidates.append(cfg)
        if cv == "registers" and st == 4 and t <= 16:
            # Register-fed with two slots per consumer also with the slot handed back before the softmax.
            candidates.append(replace(cfg, release_early=True))
    ok, pruned = [], []
    for cfg in candidates:
        try:
            ok.append(cfg.validate())
        except ValueError as e:
            pruned.append((cfg, str(e)))
    return ok, pruned


def applies(cfg: DecodeKernelConfig, heads: int) -> bool:
    """Whether the tuner tries `cfg` for `heads`: heads as M always (pair: above one head tile),
    tokens as M with the one head tile that holds the heads (a larger one pads, a smaller one
    re-reads the latent)."""
    if cfg.pair:
        return heads > cfg.head_tile  # two head tiles to share the gather
    return cfg.tiling == "heads_m" or cfg.head_tile == tokens_m_tile(heads)


def split_candidates(shape: ShapeKey, cfg: DecodeKernelConfig, num_sms: int) -> List[int]:
    if not applies(cfg, shape.heads):
        return []
    tiles = -(-shape.heads // cfg.head_tile)
    chunks = -(-shape.width // cfg.chunk_tokens)
    res = [s for s in SPLITS if s <= min(cfg.max_splits, chunks) and (s == 1 or shape.batch * tiles * s <= MAX_WAVES * num_sms)]
    return res


def shape_grid(batches: Iterable[int], heads: Iterable[int], widths: Iterable[int], pages: Iterable[int]) -> List[ShapeKey]:
    return [ShapeKey(b, h, w, p) for p in pages for w in widths for h in heads for b in batches]


def candidate_key(shape: ShapeKey, cfg: DecodeKernelConfig, splits: int) -> str:
    return json.dumps([vars(shape), cfg.to_dict(), splits], sort_keys=True)


@dataclass
class Progress:
    path: str
    results: Dict[str, object]  # candidate key -> µs (float) or "error: ..."

    @classmethod
    def open(cls, path: str) -> "Progress":
        res: Dict[str, object] = {}
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    if line.strip():
                        d = json.loads(line)
                        res[d["key"]] = d["result"]
        return cls(path, res)

    def record(self, key: str, result) -> None:
        self.results[key] = result
        with open(self.path, "a") as f:
            f.write(json.dumps({"key": key, "result": result}) + "\n")


def best_two(shape: ShapeKey, configs: List[DecodeKernelConfig], prog: Progress, num_sms: int) -> Optional[Entry]:
    timed = []
    for cfg in configs:
        for s in split_candidates(shape, cfg, num_sms):
            r = prog.results.get(candidate_key(shape, cfg, s))
            if isinstance(r, (int, float)):
                timed.append(Choice(cfg, s, float(r)))
    if not timed:
        return None
    timed.sort(key=lambda c: c.us)
    return Entry(shape, timed[0], timed[1] if len(timed) > 1 else None)


def measure(shape: ShapeKey, cfg: DecodeKernelConfig, splits: int, problem, ref, flush, args) -> object:
    import torch

    from .bench import ours_call
    from .testing import relative_error
    from .timing import time_graph

    try:
        call = ours_call(problem, cfg, splits)
        out = call()[0]
        sel = sorted({0, shape.batch - 1})
        err = relative_error(out[sel].float(), ref)
        if not err <= 5e-3:
            return f"error: relative error {err:.3e} vs the oracle"
        return time_graph(call, flush, calls=args.graph_calls, replays=args.replays)
    except Exception as e:  # a failing candidate is recorded and skipped, never fatal
        torch.cuda.synchronize()
        return f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def heuristic_key(shape: ShapeKey, num_sms: int) -> str:
    """The progress key of what the analytical heuristic would launch for `shape`."""
    from types import SimpleNamespace

    from .heuristics import choose_splits, default_config

    problem = SimpleNamespace(num_rows=shape.batch, num_heads=shape.heads, width=shape.width)
    cfg = default_config(problem)
    return candidate_key(shape, cfg, choose_splits(problem, cfg, num_sms))


def report(shapes: List[ShapeKey], configs: List[DecodeKernelConfig], prog: Progress, num_sms: int) -> List[str]:
    """Markdown rows: per shape the tuned winner against the heuristic's choice, both from the same
    sweep (CUDA-graph medians, L2 flushed), then the geomean and the worst shape."""
    lines = ["| B | H | W | tuned µs | tuned choice | heuristic µs | heuristic/tuned |", "|---|---|---|---|---|---|---|"]
    ratios = []
    for sh in shapes:
        entry = best_two(sh, configs, prog, num_sms)
        h = prog.results.get(heuristic_key(sh, num_sms))
        if entry is None or not isinstance(h, (int, float)):
            continue
        b = entry.best
        r = h / b.us
        ratios.append((r, sh))
        lines.append(f"| {sh.batch} | {sh.heads} | {sh.width} | {b.us:.1f} | {b.config.label()} x{b.splits} | {h:.1f} | {r:.3f} |")
    if ratios:
        import math

        geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        best, sh = max(ratios, key=lambda t: t[0])
        lines.append("")
        lines.append(f"heuristic/tuned: geomean {geo:.3f}x over {len(ratios)} shapes; largest gain {best:.3f}x at B={sh.batch} H={sh.heads} W={sh.width}")
    return lines


def supervise(worker_argv: List[str], progress_path: str, watchdog: float, max_restarts: int) -> int:
    """Run `worker_argv` until it exits 0; a candidate that stalls (no new `.current` within
    `watchdog` seconds) or kills its worker is recorded as failed and a new worker resumes."""
    current = progress_path + ".current"
    for attempt in range(max_restarts + 1):
        if os.path.exists(current):
            os.remove(current)
        worker = subprocess.Popen(worker_argv)
        beat, last = time.time(), None
        while worker.poll() is None:
            time.sleep(0.2)
            key = open(current).read() if os.path.exists(current) else None
            if key != last:
                beat, last = time.time(), key
            elif time.time() - beat > watchdog:
                worker.kill()
                worker.wait()
                break
        if worker.returncode == 0:
            return 0
        key = open(current).read() if os.path.exists(current) else None
        prog = Progress.open(progress_path)
        if not key or key in prog.results:
            print(f"tune: worker exited with {worker.returncode} outside a measurement", file=sys.stderr)
            return worker.returncode or 1
        why = "no result within the watchdog" if worker.returncode == -9 else f"worker died ({worker.returncode})"
        prog.record(key, f"error: {why} (hang or lost CUDA context)")
        print(f"tune: candidate failed ({why}); restarting the worker ({attempt + 1}/{max_restarts})", file=sys.stderr)
    return 1


def select_tiling(configs: List[DecodeKernelConfig], tiling: str) -> List[DecodeKernelConfig]:
    """The configs of one tiling ("all": every config). A one-tiling sweep still measures the
    default config of the other tiling, so each bucket's winner is compared with it."""
    if tiling == "all":
        return configs
    ref = [DecodeKernelConfig()] if tiling == "tokens_m" else [
        DecodeKernelConfig(tiling="tokens_m", head_tile=t, chunk_tokens=64, stages=3) for t in TOKENS_M_HEAD_TILES
    ]
    return [c for c in configs if c.tiling == tiling] + ref


def start_table(path: str, gpu: str, num_sms: int) -> TuningTable:
    """The table a sweep adds its buckets to: the existing file when it is for this GPU and
    library (buckets not swept again are kept), else an empty one."""
    if os.path.isfile(path):
        try:
            t = TuningTable.load(path)
            if t.mismatch(gpu) is None:
                return t
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return TuningTable(gpu=gpu, sm_count=num_sms)


def select_labels(configs: List[DecodeKernelConfig], labels: Optional[str]) -> List[DecodeKernelConfig]:
    """Only the configs named in `labels` ('n64 st5 kv2 w128 lg s1;n32 st2 kv2 w128'), or all."""
    if not labels:
        return configs
    wanted = [x.strip() for x in labels.split(";") if x.strip()]
    known = {c.label() for c in configs}
    unknown = [x for x in wanted if x not in known]
    if unknown:
        raise SystemExit(f"--configs: {unknown} are not labels of tunable configs of this tiling")
    return [c for c in configs if c.label() in wanted]


def run(args) -> int:
    configs, pruned = config_space()
    configs = select_labels(select_tiling(configs, args.tiling), args.configs)
    shapes = shape_grid(int_list(args.batch, BATCHES), int_list(args.heads, HEADS), int_list(args.width, WIDTHS), int_list(args.page, PAGES))
    num_sms = NUM_SMS_H200
    if not (args.dry_run or args.report):
        import torch

        if not torch.cuda.is_available():
            print("tune needs a CUDA GPU; use --dry-run to list the plan", file=sys.stderr)
            return 2
        from .config_select import device_info

        gpu, num_sms = device_info(torch.device("cuda"))
    else:
        gpu = args.gpu or "NVIDIA H200"
    if args.report:
        prog = Progress.open(args.progress or os.path.join("tuning", gpu_file_name(gpu)) + ".progress.jsonl")
        print("\n".join(report(shapes, configs, prog, num_sms)))
        return 0
    plan = [(sh, c, s) for sh in shapes for c in configs for s in split_candidates(sh, c, num_sms)]
    print(f"{len(configs)} configs ({len(pruned)} pruned), {len(shapes)} shapes, {len(plan)} measurements")
    for cfg, why in pruned:
        print(f"  pruned: {cfg.label()}: {why.split(': ', 1)[-1]}")
    if args.dry_run:
        for sh in shapes:
            n = sum(1 for p in plan if p[0] == sh)
            print(f"  B={sh.batch} H={sh.heads} W={sh.width} page={sh.page}: {n} candidates")
        return 0

    from .bench import SOFTMAX_SCALE
    from .bench_inputs import make_bench_problem
    from .reference import masked_attention
    from .timing import L2Flusher

    out_path = args.out or os.path.join("tuning", gpu_file_name(gpu))
    progress_path = args.progress or out_path + ".progress.jsonl"
    if not args.worker and args.watchdog > 0:
        argv = [sys.executable, "-m", "cute_dsa"] + list(args.argv) + ["--worker", "--progress", progress_path]
        return supervise(argv, progress_path, args.watchdog, args.max_restarts)
    prog = Progress.open(progress_path)
    table = start_table(out_path, gpu, num_sms)
    flush = L2Flusher(torch.device("cuda"))
    done_before = sum(1 for p in plan if candidate_key(*p) in prog.results)
    t0, done = time.time(), 0
    for i, sh in enumerate(shapes):
        todo = [(c, s) for c, s in ((p[1], p[2]) for p in plan if p[0] == sh) if candidate_key(sh, c, s) not in prog.results]
        if todo:
            problem = make_bench_problem(sh.batch, sh.heads, sh.width, context=args.context, page=sh.page, seed=i)
            inp = problem.inputs
            sel = torch.tensor(sorted({0, sh.batch - 1}), device="cuda")
            ref, _ = masked_attention(
                inp.q[sel], inp.kv_cache, inp.block_table[sel], inp.seq_lens[sel], inp.indices[sel],
                k_scale=inp.k_scale, v_scale=inp.v_scale, softmax_scale=SOFTMAX_SCALE,
            )
            for cfg, s in todo:
                key = candidate_key(sh, cfg, s)
                with open(prog.path + ".current", "w") as f:  # the watchdog's heartbeat
                    f.write(key)
                prog.record(key, measure(sh, cfg, s, problem, ref, flush, args))
                done += 1
            del problem, inp, ref
            torch.cuda.empty_cache()
        entry = best_two(sh, configs, prog, num_sms)
        if entry is not None:
            table.put(entry)
            table.save(out_path)
        left = len(plan) - done_before - done
        eta = (time.time() - t0) / max(done, 1) * left
        best = f"{entry.best.us:.1f} µs ({entry.best.config.label()} x{entry.best.splits})" if entry else "none"
        print(f"[{i + 1}/{len(shapes)} eta {eta:4.0f}s] B={sh.batch} H={sh.heads} W={sh.width}: best {best}", file=sys.stderr, flush=True)
    errors = sum(1 for p in plan if str(prog.results.get(candidate_key(*p), "")).startswith("error"))
    print(f"wrote {out_path}: {len(table.entries)} entries; {errors} candidates failed (see {prog.path})")
    return 0


def add_parser(sub) -> None:
    t = sub.add_parser("tune", help="measure launch choices per shape bucket, write tuning/<GPU>.yaml (GPU)")
    add_grid_args(t, batch=BATCHES, heads=HEADS, width=WIDTHS, page=PAGES)
    t.add_argument("--context", type=int, default=32768)
    t.add_argument("--graph-calls", type=int, default=5)
    t.add_argument("--replays", type=int, default=7)
    t.add_argument("--out", help="YAML path (default tuning/<GPU>.yaml)")
    t.add_argument("--progress", help="resume file (default <out>.progress.jsonl)")
    t.add_argument("--tiling", choices=("all", "heads_m", "tokens_m"), default="all",
                   help="sweep one tiling's configs (plus the other's default, for comparison)")
    t.add_argument("--configs", help="only these configs, by label, ';'-separated (keep the buckets' current winners in, "
                   "a bucket's entry is replaced by the best config measured)")
    t.add_argument("--dry-run", action="store_true", help="list what would be measured; needs no GPU")
    t.add_argument("--gpu", help="GPU name for --dry-run and --report (default NVIDIA H200)")
    t.add_argument("--report", action="store_true",
                   help="no GPU: from the progress file, the tuned winner vs the heuristic's choice per shape")
    t.add_argument("--watchdog", type=float, default=120.0,
                   help="seconds without progress before a candidate counts as hung (0: no worker process)")
    t.add_argument("--max-restarts", type=int, default=20)
    t.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    t.set_defaults(fn=run)
