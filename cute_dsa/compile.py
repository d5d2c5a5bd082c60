"""Compile cache: one compiled kernel per frozen static key, built from fake tensors (dynamic
shapes, declared alignment), so compilation needs no GPU and no real data. With
`CUTE_DSL_ARCH=sm_90a` it runs on a machine without a GPU (CI, `cute-dsa compile`).

Calls go through TVM-FFI (`--enable-tvm-ffi`): torch tensors are passed directly and the kernel
launches on torch's current CUDA stream.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from typing import Callable, Dict, Hashable, Optional, Tuple

from .kernel_cache import load_or_build
from .kernel_config import DecodeVariant

_lock = threading.Lock()
_cache: Dict[Hashable, Callable] = {}

COMPILE_OPTIONS = "--enable-tvm-ffi"


def _sym(div: int = 1):
    import cutlass.cute as cute

    return cute.sym_int32(divisibility=div)


def _sym64(div: int = 1):
    """A 64-bit dynamic stride: offsets through it are computed in 64 bits (a cache > 2 GiB)."""
    import cutlass.cute as cute

    return cute.sym_int64(divisibility=div)


def _fake(dtype, shape, stride, align):
    import cutlass.cute as cute

    return cute.runtime.make_fake_tensor(dtype, shape, stride, assumed_align=align)


def _stream():
    from cutlass.runtime import make_fake_stream

    return make_fake_stream(use_tvm_ffi_env_stream=True)


def _compile(kernel, *args, dump: Optional[Tuple[str, str]] = None):
    """cute.compile with TVM-FFI; `dump=(dir, name)` also writes the PTX and cubin as dir/name.*"""
    import cutlass.cute as cute

    if dump is None:
        return cute.compile(kernel, *args, options=COMPILE_OPTIONS)
    out_dir, name = dump
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        opts = f"{COMPILE_OPTIONS} --keep-ptx --keep-cubin --dump-dir {tmp}"
        fn = cute.compile(kernel, *args, options=opts)
        for f in os.listdir(tmp):
            ext = f.rsplit(".", 1)[-1]
            if ext in ("ptx", "cubin"):
                shutil.move(os.path.join(tmp, f), os.path.join(out_dir, f"{name}.{ext}"))
    return fn


def build_resolve(table_slots: int, dump=None, num_threads: Optional[int] = None):
    """num_threads: the CTA size (default RESOLVE_THREADS); other sizes only for experiments."""
    import cutlass
    import cutlass.cute as cute

    from .kernels.resolve_indices import RESOLVE_THREADS, ResolveIndicesKernel

    i32 = cutlass.Int32
    rows, width, mb = _sym(), _sym(), _sym()
    indices = _fake(i32, (rows, width), (_sym(), 1), 4)
    seq_lens = _fake(i32, (rows,), (1,), 4)
    block_table = _fake(i32, (rows, mb), (_sym(), 1), 4)
    phys = _fake(i32, (rows, width), (_sym(), 1), 4)
    kernel = ResolveIndicesKernel(table_slots, num_threads or RESOLVE_THREADS)
    return _compile(kernel, indices, seq_lens, block_table, phys, i32(64), i32(1), _stream(), dump=dump)


def build_decode(variant: DecodeVariant, dump=None):
    import cutlass
    import cutlass.cute as cute

    from .kernels.sparse_decode import SparseDecodeKernel
    from .kernels.sparse_decode_shared_p import SharedPDecodeKernel
    from .kernels.sparse_decode_tokens import SparseDecodeTokensKernel

    rows, heads, width, splits = _sym(), _sym(), _sym(), _sym()
    q = _fake(cutlass.BFloat16, (rows, heads, 512), (_sym(8), _sym(8), 1), 16)
    if variant.flat_cache:
        cache = _fake(cutlass.Uint8, (_sym(), _sym(16)), (_sym64(16), 1), 16)
    else:
        cache = _fake(cutlass.Uint8, (_sym(), _sym(), _sym(16)), (_sym64(16), _sym64(16), 1), 16)
    phys = _fake(cutlass.Int32, (rows, width), (_sym(), 1), 4)
    indices = _fake(cutlass.Int32, (rows, width), (_sym(), 1), 4)
    seq_lens = _fake(cutlass.Int32, (rows,), (1,), 4)
    block_table = _fake(cutlass.Int32, (rows, _sym()), (_sym(), 1), 4)
    f32 = cutlass.Float32
    k_scale = _fake(f32, (1,), (1,), 4) if variant.k_scale_on_device else f32(1.0)
    v_scale = _fake(f32, (1,), (1,), 4) if variant.v_scale_on_device else f32(1.0)
    if variant.split:
        out = _fake(f32, (rows, splits, heads, 512), (_sym(16), _sym(16), _sym(16), 1), 16)
        lse = _fake(f32, (rows, splits, heads), (_sym(), _sym(), 1), 4)
    else:
        out = _fake(cutlass.BFloat16, (rows, heads, 512), (_sym(8), _sym(8), 1), 16)
        lse = _fake(f32, (rows, heads), (_sym(), 1), 4)
    cfg = variant.config
    kernel_class = SparseDecodeTokensKernel if cfg.tiling == "tokens_m" else SharedPDecodeKernel if cfg.scores == "one" else SparseDecodeKernel
    kernel = kernel_class(variant)
    i32 = cutlass.Int32
    return _compile(
        kernel, q, cache, phys, indices, seq_lens, block_table, k_scale, v_scale, f32(1.0), out, lse,
        i32(32), i32(1), i32(64), i32(1), _stream(), dump=dump,
    )


def build_combine(write_lse: bool, prefetch: int, dump=None):
    import cutlass
    import cutlass.cute as cute

    from .kernels.combine_splits import CombineSplitsKernel

    f32 = cutlass.Float32
    rows, splits, heads = _sym(), _sym(), _sym()
    o_part = _fake(f32, (rows, splits, heads, 512), (_sym(16), _sym(16), _sym(16), 1), 16)
    lse_part = _fake(f32, (rows, splits, heads), (_sym(), _sym(), 1), 4)
    out = _fake(cutlass.BFloat16, (rows, heads, 512), (_sym(8), _sym(8), 1), 16)
    lse = _fake(f32, (rows, heads), (_sym(), 1), 4)
    return _compile(CombineSplitsKernel(write_lse=write_lse, prefetch=prefetch), o_part, lse_part, out, lse, _stream(), dump=dump)


def get(key: Hashable, build: Callable[[], Callable]) -> Callable:
    """The compiled function for `key`, compiling it once per process (or loading it from the
    persistent kernel cache, when CUTE_DSA_KERNEL_CACHE names one)."""
    fn = _cache.get(key)
    if fn is None:
        with _lock:
            fn = _cache.get(key)
            if fn is None:
                fn = load_or_build(key, build)
                _cache[key] = fn
    return fn


def kernel_for_key(key: tuple) -> Callable:
    """The compiled kernel of a key as `get` stores it: ("resolve", slots), ("decode", variant) or
    ("combine", write_lse, prefetch depth)."""
    kind, *args = key
    builders = {"resolve": build_resolve, "decode": build_decode, "combine": build_combine}
    if kind not in builders:
        raise ValueError(f"kernel key {key!r}: expected a first element in {sorted(builders)}")
    return get(key, lambda: builders[kind](*args))


def resolve_kernel(table_slots: int) -> Callable:
    return kernel_for_key(("resolve", table_slots))


def decode_kernel(variant: DecodeVariant) -> Callable:
    return kernel_for_key(("decode", variant))


def combine_kernel(write_lse: bool, splits: int) -> Callable:
    from .kernels.combine_splits import prefetch_depth

    return kernel_for_key(("combine", write_lse, prefetch_depth(splits)))


def ensure_arch_for_cpu_compile() -> None:
    """Without a visible GPU the DSL needs a target: compile for Hopper."""
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
