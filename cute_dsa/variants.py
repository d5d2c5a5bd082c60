"""Every compiled variant the package can launch, and the checks its PTX must pass."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional

from . import compile as kc
from .heuristics import MAX_TABLE_SLOTS
from .kernel_config import DecodeKernelConfig, DecodeVariant
from .kernels.combine_splits import PREFETCH_DEPTHS


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # "decode" | "ablation" | "resolve" | "combine"
    build: Callable  # build(dump=(dir, name)) -> compiled function


def decode_variant_name(v: DecodeVariant) -> str:
    c = v.config
    return (
        f"decode_{c.tiling}_m{c.head_tile}_n{c.chunk_tokens}_st{c.stages}_kv{c.kv_buffers}_w{c.id_window}_{c.gather}"
        f"{''.join('_' + t for t in c.tags())}{'_flat' if v.flat_cache else ''}"
        f"_{'split' if v.split else 'direct'}{'_lse' if v.write_lse else ''}"
        f"{'_kdev' if v.k_scale_on_device else ''}{'_vdev' if v.v_scale_on_device else ''}"
        f"{'_fr' if v.fused_resolve else ''}{'_sr' if v.stream_resolve else ''}{'_phys' if v.physical_ids else ''}{'_drop_' + v.drop if v.drop else ''}"
    )


def decode_variants(configs: Iterable[DecodeKernelConfig], all_flags: bool = True) -> List[DecodeVariant]:
    out = []
    for cfg in configs:
        # Every flag combination, or the two a tuned config runs with (direct and split, LSE),
        # each for a flat and a padded (blocked) cache.
        flags = itertools.product([False, True], repeat=5) if all_flags else itertools.product([False, True], [True], [False], [False], [False, True])
        for split, lse, kdev, vdev, flat in flags:
            out.append(DecodeVariant(cfg, split=split, write_lse=lse, k_scale_on_device=kdev, v_scale_on_device=vdev, flat_cache=flat))
        # Short splits resolve their own ids (the launch's choice at small batch; direct: one
        # short split, or forced), with LSE. A pair never does (each CTA gathers half a tile).
        for split, flat in itertools.product([False, True], repeat=2) if not cfg.pair else ():
            out.append(DecodeVariant(cfg, split=split, write_lse=True, k_scale_on_device=False, v_scale_on_device=False,
                                     flat_cache=flat, fused_resolve=True))
    return out


def stream_variants(configs: Iterable[DecodeKernelConfig]) -> List[DecodeVariant]:
    """The decode resolving its ids window by window (the launch's choice for long splits), for the
    configs that can: direct and split, with LSE, flat and blocked cache."""
    out = []
    for cfg in dict.fromkeys(configs):
        if cfg.can_stream_resolve():
            for split, flat in itertools.product([False, True], repeat=2):
                out.append(DecodeVariant(cfg, split=split, write_lse=True, k_scale_on_device=False, v_scale_on_device=False,
                                         flat_cache=flat, stream_resolve=True))
    return out


def physical_variants(configs: Iterable[DecodeKernelConfig]) -> List[DecodeVariant]:
    """The decode on the caller's physical ids (`physical_indices=True`): direct and split, with
    LSE, flat and blocked cache."""
    return [
        DecodeVariant(cfg, split=split, write_lse=True, k_scale_on_device=False, v_scale_on_device=False,
                      flat_cache=flat, physical_ids=True)
        for cfg in dict.fromkeys(configs) for split, flat in itertools.product([False, True], repeat=2)
    ]


def tuned_configs() -> List[DecodeKernelConfig]:
    """The configs of the shipped H200 tuning table (tuning/NVIDIA_H200.yaml)."""
    from .tuning_table import table_for

    table = table_for("NVIDIA H200")
    return [e.best.config for e in table.entries] if table else []


def all_variants(configs: Optional[Iterable[DecodeKernelConfig]] = None) -> List[Variant]:
    """Every kernel the package can launch: the resolve and combine kernels, the default decode
    config with every flag combination, every other config the tuner may choose (direct and
    split, with LSE) and the ablation kernels, or only the decode configs given."""
    res: List[Variant] = []
    slots = 64
    while slots <= MAX_TABLE_SLOTS:
        res.append(Variant(f"resolve_t{slots}", "resolve", lambda dump, s=slots: kc.build_resolve(s, dump=dump)))
        slots *= 2
    for lse in (True, False):
        for depth in PREFETCH_DEPTHS:
            res.append(Variant(f"combine{'_lse' if lse else ''}_p{depth}", "combine",
                               lambda dump, l=lse, d=depth: kc.build_combine(l, d, dump=dump)))
    if configs is None:
        from types import SimpleNamespace

        from .heuristics import default_config
        from .tune import config_space

        default = DecodeKernelConfig()
        # The heuristic's configs (tokens as M for 8 and 16 heads, heads as M for 32 and 64, at
        # small and large batch) with every flag; every other tunable config direct and split.
        defaults = [default]
        for h, rows in itertools.product((8, 16, 32, 64), (8, 256)):  # small and large batch choices
            cfg = default_config(SimpleNamespace(num_heads=h, num_rows=rows))
            defaults += [cfg] if cfg not in defaults else []
        decodes = decode_variants(defaults) + decode_variants([c for c in config_space()[0] if c not in defaults], all_flags=False)
        # The ablation kernels of `cute-dsa ablate` (split, with LSE, default config).
        decodes += [DecodeVariant(default, True, True, False, False, flat_cache=True, drop=d) for d in ("gather", "ids", "convert", "mma")]
        decodes += stream_variants(defaults + tuned_configs())
        decodes += physical_variants(defaults + tuned_configs() + [c for c in config_space()[0] if c.pair or (c.l2_prefetch and c.tiling == "heads_m")])
    else:
        decodes = decode_variants(list(configs), all_flags=False)
    for dv in decodes:
        kind = "ablation" if dv.drop else decode_kind(dv)
        res.append(Variant(decode_variant_name(dv), kind, lambda dump, v=dv: kc.build_decode(v, dump=dump)))
    return res


def decode_kind(v: DecodeVariant) -> str:
    """The PTX promises a decode variant makes: its rows come by cp.async or by 128-bit loads (and
    with its own resolve, '+resolve': the duplicate filter's shared-memory atomics; streamed,
    '+stream': those and the token bitmap's; '+pair': the stores into the cluster peer; '+pf': the
    L2 prefetch of the next id window's rows, DecodeVariant.prefetches_l2)."""
    cfg = v.config
    own = "+resolve" if v.fused_resolve else "+stream" if v.stream_resolve else ""
    pf = "+pf" if v.prefetches_l2 else ""
    return ("decode_lg" if cfg.gather == "ld_global" else "decode") + own + ("+pair" if cfg.pair else "") + pf


# What each kernel's PTX must contain (the design's promises) and must not.
REQUIRED = {
    "decode": ["wgmma.mma_async", "cp.async.cg.shared.global", "cvt.rn.f16x2.e4m3x2", "setmaxnreg", "bar.arrive"],
    "decode_lg": ["wgmma.mma_async", "ld.global.v4.b32", "cvt.rn.f16x2.e4m3x2", "setmaxnreg", "bar.arrive"],
    "ablation": ["setmaxnreg", "bar.arrive"],  # a dropped stage takes its instructions with it
    "resolve": ["atom.shared.cta.cas.b32", "atom.shared.cta.min.s32"],
    "stream": ["atom.shared.cta.cas.b32", "atom.shared.cta.min.s32", "atom.shared.cta.or.b32"],
    "combine": ["ld.global.v4"],
    # Two head tiles of a cluster: the peer's half of each tile by st.async, both CTAs' barriers.
    "pair": ["st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32", "mapa.shared::cluster", "barrier.cluster.wait",
             "mbarrier.arrive.release.cluster.shared::cluster"],
    "pf": ["cp.async.bulk.prefetch.L2.global"],
}
FORBIDDEN = ["ld.local", "st.local"]


def check_ptx(kind: str, ptx: str) -> List[str]:
    """What `ptx` lacks of the promises of `kind` ('a+b': both kinds'), and any local memory."""
    required = [s for k in kind.split("+") for s in REQUIRED[k]]
    problems = [f"missing {s}" for s in required if s not in ptx]
    problems += [f"contains {s} (local memory)" for s in FORBIDDEN if s in ptx]
    return problems


def setmaxnreg_need(ptx: str) -> Optional[int]:
    """Registers the kernel's setmaxnreg split needs per CTA (one producer warpgroup decreases,
    the others increase), or None when it does not use setmaxnreg. setmaxnreg.inc waits for
    registers the CTA's pool does not have, so a need above the launch allocation deadlocks."""
    dec = re.findall(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+);", ptx)
    inc = re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+);", ptx)
    threads = re.search(r"\.reqntid (\d+), 1, 1", ptx)
    if not dec or not inc or not threads:
        return None
    n = int(threads.group(1))
    if len(dec) + len(inc) == n // 128:  # one setmaxnreg per warpgroup (each its own share)
        return 128 * sum(map(int, dec + inc))
    return 128 * max(map(int, dec)) + (n - 128) * max(map(int, inc))


def reqntid(ptx: str) -> int:
    m = re.search(r"\.reqntid (\d+), 1, 1", ptx)
    return int(m.group(1)) if m else 0


def find_ptxas() -> Optional[str]:
    try:  # the nvidia-cuda-nvcc wheel (the `test` extra) ships one
        import nvidia.cuda_nvcc as nv  # type: ignore

        p = os.path.join(list(nv.__path__)[0], "bin", "ptxas")
        if os.access(p, os.X_OK):
            return p
    except ImportError:
        pass
    return shutil.which("ptxas")


@dataclass
class PtxasReport:
    registers: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int
    wgmma_serialized: bool  # ptxas had to serialize wgmma (C7513/C7514): the overlap is lost


def ptxas_report(ptxas: str, ptx_path: str) -> PtxasReport:
    """Assemble for sm_90a and read the resource usage of the (single) entry point."""
    res = subprocess.run(
        [ptxas, "-arch=sm_90a", "-v", ptx_path, "-o", os.devnull], capture_output=True, text=True, check=True
    )
    text = res.stderr + res.stdout
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", text)
    r = re.search(r"Used (\d+) registers", text)
    if not m or not r:
        raise RuntimeError(f"could not read ptxas -v output:\n{text}")
    serialized = "wgmma.mma_async instructions are serialized" in text
    return PtxasReport(int(r.group(1)), int(m.group(1)), int(m.group(2)), int(m.group(3)), serialized)
