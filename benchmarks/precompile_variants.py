"""Compile into the kernel cache ($CUTE_DSA_KERNEL_CACHE) every variant of the given configs that a
GPU test may launch (direct and split, flat and blocked cache, own resolve, streamed resolve, physical
ids), with no GPU (sm_90a), so a device call loads them instead of compiling them there.

    CUTE_DSA_KERNEL_CACHE=/tmp/kcache_build python benchmarks/precompile_variants.py \\
        "chunk_tokens=64,stages=5,gather=ld_global,scores=one,overlap=true" \\
        "chunk_tokens=64,stages=6,gather=ld_global,scores=one"
"""

import os
import sys
import time

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from cute_dsa import compile as kc  # noqa: E402
from cute_dsa import kernel_cache  # noqa: E402
from cute_dsa.bench import parse_config  # noqa: E402
from cute_dsa.variants import decode_variants, physical_variants, stream_variants  # noqa: E402


def main(texts) -> None:
    cfgs = [parse_config(t) for t in texts]
    variants = decode_variants(cfgs, all_flags=False) + stream_variants(cfgs) + physical_variants(cfgs)
    for i, v in enumerate(variants):
        t = time.time()
        kc.decode_kernel(v)
        print(f"[{i + 1}/{len(variants)}] {v.config.label():32s} {time.time() - t:5.1f} s", flush=True)
    print(kernel_cache.stats)


if __name__ == "__main__":
    main(sys.argv[1:])
