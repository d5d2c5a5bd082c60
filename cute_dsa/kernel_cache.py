"""Persistent kernel cache: compiled kernels kept as host objects on disk, so a process (an engine
starting up, a benchmark on a fresh GPU machine) loads them in milliseconds instead of compiling.

Off unless `CUTE_DSA_KERNEL_CACHE` names a directory. An entry is the TVM-FFI host object that
`export_to_c` writes (host launch code + the sm_90a cubin), named by a digest of the compile key,
the kernel sources, the DSL version and the target arch: any change to one of them is a miss,
never a stale kernel. Beside each entry its key (`NAME.key`, the key's repr), so the kernels a run
needed can be rebuilt for changed sources (`cute-dsa precompile --keys-from DIR`). Entries built
on a machine without a GPU (`CUTE_DSL_ARCH=sm_90a`, `cute-dsa precompile`) load on a Hopper GPU
(built with the cu12 DSL libraries, loaded with the cu13 ones: measured on an H100). A miss
compiles and writes the entry; an entry that fails to load is compiled again and replaced, with a
warning.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Callable, Hashable, List, Optional

CACHE_ENV = "CUTE_DSA_KERNEL_CACHE"
_PACKAGE = Path(__file__).resolve().parent
_sources_digest: Optional[str] = None
stats = {"loaded": 0, "built": 0}  # this process's entries loaded from and compiled into the cache


def cache_dir() -> Optional[Path]:
    d = os.environ.get(CACHE_ENV, "").strip()
    return Path(d) if d else None


# What a compiled kernel depends on: the kernels, their static configuration and the compile
# entry points (fake tensors, options). Other modules (the adapter, the benchmark, this one) may
# change without invalidating the cache; ENTRY_FORMAT changes when an entry's format does.
KERNEL_SOURCES = ("kernels/*.py", "kernel_config.py", "compile.py")
ENTRY_FORMAT = "tvm-ffi-object-1"


def _digest_of_sources() -> str:
    """The kernel sources and the DSL version."""
    global _sources_digest
    if _sources_digest is None:
        from importlib.metadata import version

        h = hashlib.sha256(f"{ENTRY_FORMAT}|{version('nvidia-cutlass-dsl')}".encode())
        for f in sorted(p for pattern in KERNEL_SOURCES for p in _PACKAGE.glob(pattern)):
            h.update(str(f.relative_to(_PACKAGE)).encode())
            h.update(f.read_bytes())
        _sources_digest = h.hexdigest()
    return _sources_digest


def target_arch() -> str:
    """The arch the DSL compiles for: CUTE_DSL_ARCH when set (no GPU), else the current GPU's."""
    arch = os.environ.get("CUTE_DSL_ARCH", "").strip()
    if arch:
        return arch
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


def entry_name(key: Hashable) -> str:
    """A C identifier naming the key's entry (its file stem and exported function)."""
    h = hashlib.sha256(f"{key!r}|{target_arch()}|{_digest_of_sources()}".encode()).hexdigest()[:24]
    kind = key[0] if isinstance(key, tuple) and key and isinstance(key[0], str) else "kernel"
    return f"cute_dsa_{kind}_{h}"


def _load(path: Path, name: str) -> Callable:
    import cutlass

    return cutlass.runtime.load_module(str(path), enable_tvm_ffi=True)[name]


def _store(fn, directory: Path, name: str, key: Hashable) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{name}.{os.getpid()}.tmp.o"  # the object format comes from the suffix
    fn.export_to_c(str(tmp), name)
    os.replace(tmp, directory / f"{name}.o")  # atomic: a concurrent reader sees no half-written entry
    # The key beside it: `cute-dsa precompile --keys-from DIR` rebuilds what a run needed for
    # changed sources, on a machine without a GPU.
    (directory / f"{name}.key").write_text(repr(key) + "\n")


def keys_in(directory: Path) -> List[Hashable]:
    """The compile keys recorded beside a cache directory's entries (any sources' digest)."""
    from .kernel_config import DecodeKernelConfig, DecodeVariant

    names = {"DecodeVariant": DecodeVariant, "DecodeKernelConfig": DecodeKernelConfig, "__builtins__": {}}
    keys = []
    for f in sorted(Path(directory).glob("*.key")):
        try:
            keys.append(eval(f.read_text(), names))  # reprs of tuples of literals and the frozen configs
        except Exception as e:
            warnings.warn(f"cute_dsa: ignoring kernel cache key file {f} ({e})")
    return list(dict.fromkeys(keys))


def load_or_build(key: Hashable, build: Callable[[], Callable]) -> Callable:
    """The compiled function for `key`: from the cache directory when set and present, else built
    (and stored there when set)."""
    directory = cache_dir()
    if directory is None:
        return build()
    name = entry_name(key)
    path = directory / f"{name}.o"
    if path.exists():
        try:
            fn = _load(path, name)
            stats["loaded"] += 1
            return fn
        except Exception as e:  # a damaged or foreign entry: rebuild it
            warnings.warn(f"cute_dsa: kernel cache entry {path} did not load ({e}); compiling it again")
    fn = build()
    stats["built"] += 1
    try:
        _store(fn, directory, name, key)
    except Exception as e:  # a read-only or full cache directory must not fail the call
        warnings.warn(f"cute_dsa: could not write kernel cache entry {path} ({e})")
    return fn
