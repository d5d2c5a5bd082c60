"""Render `cute-dsa bench --json` output as the markdown tables of benchmarks/h200.md, with every
cell judged against issue 3's targets.

    python benchmarks/report.py bench.json [more.json ...] > part.md
"""

import json
import math
import sys


def ratio_target(batch: int, heads: int) -> float:
    if batch <= 8:
        return 1.5
    if heads <= 32:
        return 1.5
    return 1.2 if heads == 64 else 1.0


def judge(r: dict) -> str:
    notes = []
    if r.get("ratio") is not None:
        t = ratio_target(r["batch"], r["heads"])
        notes.append(f"{'met' if r['ratio'] >= t else 'MISSED'} ≥{t:.1f}×")
    if r["batch"] >= 64:
        notes.append(f"{'met' if r['roof_frac'] >= 0.6 else 'MISSED'} ≥60% roof")
    return ", ".join(notes)


def render(doc: dict) -> str:
    c = doc["ceilings"]
    lines = [
        f"GPU: {doc['gpu']}, commit `{doc['commit']}`, context {doc['context']}, page {doc['page']}; "
        f"ceilings measured in the run: copy {c['copy_tbps']:.2f} TB/s, bf16 matmul {c['bf16_tflops']:.0f} TFLOP/s.",
        "",
        "| B | H | W | ours µs | graph µs | TB/s | TFLOP/s | roof | FlashMLA µs | FM roof | torch µs | FM/ours | heur. µs | choice | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    f = lambda v, s: "-" if v is None else format(v, s)  # noqa: E731
    for r in doc["rows"]:
        cfg = r.get("config") or {}
        choice = f"n{cfg.get('chunk_tokens')} st{cfg.get('stages')}{' ov' if cfg.get('overlap') else ''} ×{r.get('splits')}"
        lines.append(
            f"| {r['batch']} | {r['heads']} | {r['width']} | {r['ours_us']:.1f} | {r['ours_graph_us']:.1f} | {r['tbps']:.2f} "
            f"| {r['tflops']:.0f} | {r['roof_frac']:.0%} | {f(r.get('flashmla_us'), '.1f')} | {f(r.get('flashmla_roof_frac'), '.0%')} "
            f"| {f(r.get('torch_us'), '.0f')} | {f(r.get('ratio'), '.2f')} | {f(r.get('heuristic_us'), '.1f')} | {choice} | {judge(r)} |"
        )
    ratios = [r["ratio"] for r in doc["rows"] if r.get("ratio")]
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        met = sum(1 for r in doc["rows"] if r.get("ratio") and r["ratio"] >= ratio_target(r["batch"], r["heads"]))
        lines += ["", f"FlashMLA/ours geomean {geo:.2f}×, min {min(ratios):.2f}×, max {max(ratios):.2f}×; ratio target met in {met}/{len(ratios)} cells."]
    heur = [r["heuristic_us"] / r["ours_us"] for r in doc["rows"] if r.get("heuristic_us")]
    if heur:
        geo = math.exp(sum(map(math.log, heur)) / len(heur))
        worst = max(doc["rows"], key=lambda r: (r.get("heuristic_us") or 0) / r["ours_us"])
        lines.append(
            f"Tuned vs heuristic (heuristic µs / tuned µs): geomean {geo:.2f}×, best case {max(heur):.2f}× "
            f"(B={worst['batch']} H={worst['heads']} W={worst['width']}), worst {min(heur):.2f}×."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path) as fh:
            print(render(json.load(fh)))
            print()
