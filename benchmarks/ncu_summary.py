"""Nsight Compute raw CSV exports -> one markdown row per kernel, plus the hottest SASS lines.

    python benchmarks/ncu_summary.py LABEL=raw.csv [LABEL=raw.csv ...] [--source src.csv [--top 20]]

raw.csv: `ncu -i REP --page raw --csv`; src.csv: `ncu -i REP --page source --csv --print-source sass`.
"""
import argparse
import csv

KERNELS = [("ResolveIndices", "resolve"), ("SharedPDecode", "decode heads-as-M, one scorer"), ("SparseDecodeTokens", "decode tokens-as-M"),
           ("SparseDecodeKernel", "decode heads-as-M"), ("CombineSplits", "combine"),
           ("flash_fwd_splitkv_mla_fp8_sparse", "FlashMLA sparse fp8 decode"), ("flash_fwd_mla_combine", "FlashMLA combine")]
STALL = "smsp__pcsamp_warps_issue_stalled_"


def _rows(path):
    rows = list(csv.reader(open(path)))
    return [dict(zip(rows[0], r)) for r in rows[2:]]  # row 1 holds the units


def _num(v):
    return float(str(v).replace(",", "") or 0)


def short_name(name: str) -> str:
    return next((label for key, label in KERNELS if key in name), name[:40])


def kernel_rows(label: str, path: str):
    for d in _rows(path):
        stalls = {k[len(STALL):]: _num(v) for k, v in d.items() if k.startswith(STALL) and not k.endswith("not_issued")}
        total = sum(stalls.values()) or 1
        top = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in sorted(stalls.items(), key=lambda x: -x[1])[:3] if v)
        yield (f"| {label} | {short_name(d['Kernel Name'])} | {d.get('Grid Size', '')} | {_num(d['gpu__time_duration.sum']):.1f} | "
               f"{_num(d['smsp__inst_executed.sum']) / 1e6:.1f} | {_num(d['sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active']):.0f} | "
               f"{_num(d.get('smsp__issue_active.avg.pct_of_peak_sustained_active', 0)):.0f} | "
               f"{_num(d['dram__bytes_read.sum.pct_of_peak_sustained_elapsed']):.0f} | {top} |")


def hot_lines(path: str, top: int):
    rows = list(csv.reader(open(path)))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    hdr = rows[head]
    data = [dict(zip(hdr, r)) for r in rows[head + 1:] if len(r) == len(hdr)]
    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    key = "Warp Stall Sampling (All Samples)"
    for i in sorted(sorted(range(len(data)), key=lambda i: -_num(data[i][key]))[:top]):
        d = data[i]
        why = {r[6:]: int(_num(d[r])) for r in reasons if _num(d[r]) >= 0.2 * max(_num(d[key]), 1)}
        yield f"{i:6d} {int(_num(d[key])):6d} {d['Instructions Executed']:>8s}  {d['Source'].strip()[:70]:70s} {why}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="*", help="LABEL=path to a raw CSV export")
    ap.add_argument("--source", help="a source (SASS) CSV export: its hottest lines")
    ap.add_argument("--top", type=int, default=20)
    a = ap.parse_args()
    if a.raw:
        print("| profile | kernel | CTAs | µs | warp instr. (M) | tensor pipe % | issue busy % | DRAM read % of peak | top stalls (sampled) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for item in a.raw:
            label, _, path = item.partition("=")
            for line in kernel_rows(label, path):
                print(line)
    if a.source:
        print("  line samples executed  SASS  {stall reason: samples, >= 20% of the line's}")
        for line in hot_lines(a.source, a.top):
            print(line)


if __name__ == "__main__":
    main()
