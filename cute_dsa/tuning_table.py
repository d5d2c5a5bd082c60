"""Tuned launch choices stored as YAML, one file per GPU (`tuning/<GPU_name>.yaml`).

A file has a header (cute_dsa and nvidia-cutlass-dsl versions, GPU name, SM count, date) and
one entry per shape bucket: the winning kernel config and split count with its measured µs, and
the runner-up. A file whose header does not match the running library or GPU is ignored with one
warning; the caller then falls back to the analytical heuristic.

Files are looked up, first match wins:
1. `$CUTE_DSA_TUNING_FILE` (a path to one YAML file);
2. the files shipped inside the package (`cute_dsa.tuning`, from the repo's `tuning/` folder);
3. `<repo>/tuning/` beside the package (a source checkout on PYTHONPATH).
"""

from __future__ import annotations

import datetime
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import yaml

from .kernel_config import DecodeKernelConfig

ENV_FILE = "CUTE_DSA_TUNING_FILE"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class ShapeKey:
    batch: int
    heads: int
    width: int
    page: int

    def distance(self, other: "ShapeKey") -> float:
        """Log-scale distance; a head-count mismatch weighs most (it changes the tiling's work)."""
        lg = lambda a, b: abs(math.log2(a) - math.log2(b))  # noqa: E731
        return 4 * lg(self.heads, other.heads) + lg(self.batch, other.batch) + lg(self.width, other.width) + 0.5 * lg(self.page, other.page)


@dataclass(frozen=True)
class Choice:
    config: DecodeKernelConfig
    splits: int
    us: float = float("nan")

    def to_dict(self) -> dict:
        return {"config": self.config.to_dict(), "splits": self.splits, "us": round(self.us, 2)}

    @classmethod
    def from_dict(cls, d: dict) -> "Choice":
        return cls(DecodeKernelConfig.from_dict(d["config"]), int(d["splits"]), float(d.get("us", "nan")))


@dataclass
class Entry:
    shape: ShapeKey
    best: Choice
    runner_up: Optional[Choice] = None

    def to_dict(self) -> dict:
        d = {"shape": vars(self.shape).copy(), **self.best.to_dict()}
        if self.runner_up is not None:
            d["runner_up"] = self.runner_up.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Entry":
        ru = d.get("runner_up")
        return cls(ShapeKey(**d["shape"]), Choice.from_dict(d), Choice.from_dict(ru) if ru else None)


def library_versions() -> Dict[str, str]:
    from importlib import metadata

    from . import __version__

    try:
        dsl = metadata.version("nvidia-cutlass-dsl")
    except metadata.PackageNotFoundError:
        dsl = "unknown"
    return {"cute_dsa": __version__, "nvidia_cutlass_dsl": dsl}


@dataclass
class TuningTable:
    gpu: str
    sm_count: int
    entries: List[Entry] = field(default_factory=list)
    versions: Dict[str, str] = field(default_factory=library_versions)
    date: str = field(default_factory=lambda: datetime.date.today().isoformat())

    def header(self) -> dict:
        return {"format": FORMAT_VERSION, **self.versions, "gpu": self.gpu, "sm_count": self.sm_count, "date": self.date}

    def dump(self) -> str:
        body = {"header": self.header(), "entries": [e.to_dict() for e in sorted(self.entries, key=_entry_order)]}
        return yaml.safe_dump(body, sort_keys=False, default_flow_style=None, width=120)

    def save(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(self.dump())
        os.replace(tmp, path)

    @classmethod
    def loads(cls, text: str) -> "TuningTable":
        d = yaml.safe_load(text)
        if not isinstance(d, dict) or "header" not in d or "entries" not in d:
            raise ValueError("tuning YAML: expected top-level keys 'header' and 'entries'")
        h = d["header"]
        if h.get("format") != FORMAT_VERSION:
            raise ValueError(f"tuning YAML header format={h.get('format')!r}: expected {FORMAT_VERSION}")
        versions = {k: str(h[k]) for k in ("cute_dsa", "nvidia_cutlass_dsl")}
        return cls(
            gpu=str(h["gpu"]), sm_count=int(h["sm_count"]), versions=versions, date=str(h["date"]),
            entries=[Entry.from_dict(e) for e in d["entries"] or []],
        )

    @classmethod
    def load(cls, path: str) -> "TuningTable":
        with open(path) as f:
            return cls.loads(f.read())

    def mismatch(self, gpu: str) -> Optional[str]:
        """Why this table does not apply to the running library on `gpu`, or None."""
        now = library_versions()
        for k, v in now.items():
            if self.versions.get(k) != v:
                return f"{k} {self.versions.get(k)} in the file, {v} running"
        if self.gpu != gpu:
            return f"GPU {self.gpu!r} in the file, {gpu!r} running"
        return None

    def nearest(self, key: ShapeKey) -> Optional[Entry]:
        if not self.entries:
            return None
        return min(self.entries, key=lambda e: (e.shape.distance(key), _entry_order(e)))

    def put(self, entry: Entry) -> None:
        self.entries = [e for e in self.entries if e.shape != entry.shape] + [entry]


def _entry_order(e: Entry) -> Tuple[int, int, int, int]:
    s = e.shape
    return (s.heads, s.width, s.page, s.batch)


def gpu_file_name(gpu: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", gpu).strip("_") + ".yaml"


def candidate_paths(gpu: str) -> List[str]:
    name = gpu_file_name(gpu)
    paths = []
    env = os.environ.get(ENV_FILE)
    if env:
        paths.append(env)
    try:
        from importlib import resources

        paths.append(str(resources.files("cute_dsa.tuning").joinpath(name)))
    except (ModuleNotFoundError, TypeError):
        pass
    paths.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tuning", name))
    return paths


_warned: set = set()


def warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg, stacklevel=3)


_tables: Dict[str, Optional[TuningTable]] = {}


def table_for(gpu: str) -> Optional[TuningTable]:
    """The first usable table for `gpu` (cached per process), or None after one warning."""
    if gpu in _tables:
        return _tables[gpu]
    table = None
    for path in candidate_paths(gpu):
        if not os.path.isfile(path):
            continue
        try:
            t = TuningTable.load(path)
        except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as e:
            warn_once(f"cute_dsa: ignoring tuning file {path}: {e}")
            continue
        why = t.mismatch(gpu)
        if why:
            warn_once(f"cute_dsa: ignoring tuning file {path}: {why}")
            continue
        table = t
        break
    _tables[gpu] = table
    return table


def clear_cache() -> None:
    _tables.clear()
