"""Compile into the kernel cache ($CUTE_DSA_KERNEL_CACHE) the kernels that GPU tests launch, with no
GPU (sm_90a), so a device call loads them instead of compiling them there. Each argument is either

- a tag (e.g. `pf`): the kernels tests/test_gpu_decode.py::test_every_tunable_config launches for
  the tunable configs carrying it, or
- a config text (`key=value,...`): every variant of that config a GPU test may launch (direct and
  split, flat and blocked cache, own resolve, streamed resolve, physical ids).

    CUTE_DSA_KERNEL_CACHE=/tmp/kcache_build python benchmarks/precompile_tests.py pf \\
        "chunk_tokens=64,stages=5,gather=ld_global,scores=one,overlap=true"
"""

import os
import sys
import time

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from cute_dsa import compile as kc  # noqa: E402
from cute_dsa import kernel_cache  # noqa: E402
from cute_dsa.api import launch_spec, spec_kernels, squeeze_kv_head  # noqa: E402
from cute_dsa.bench import parse_config  # noqa: E402
from cute_dsa.checks import DecodeProblem  # noqa: E402
from cute_dsa.testing import TUNABLE_CONFIG_SPLITS, tunable_config_inputs  # noqa: E402
from cute_dsa.tune import config_space  # noqa: E402
from cute_dsa.variants import decode_variants, physical_variants, stream_variants  # noqa: E402


def compile_tagged(tag: str) -> None:
    for cfg in (c for c in config_space()[0] if tag in c.tags()):
        inp = tunable_config_inputs(cfg, device="cpu")  # the test's inputs: the same kernels
        kv = squeeze_kv_head(inp.kv_cache)
        # As check_decode_args reads it off the tensors (it wants them on a GPU).
        problem = DecodeProblem(*inp.q.shape[:2], inp.indices.shape[1], *kv.shape[:3], k_scale_on_device=False,
                                v_scale_on_device=False, flat_cache=kv.stride(0) == kv.shape[1] * kv.stride(1),
                                max_blocks=inp.block_table.shape[1])
        for splits in TUNABLE_CONFIG_SPLITS:
            t = time.time()
            spec_kernels(launch_spec(problem, None, cfg, splits, write_lse=True))
            print(f"{cfg.label():32s} x{splits} {time.time() - t:5.1f} s", flush=True)


def compile_variants(texts) -> None:
    cfgs = [parse_config(t) for t in texts]
    variants = decode_variants(cfgs, all_flags=False) + stream_variants(cfgs) + physical_variants(cfgs)
    for i, v in enumerate(variants):
        t = time.time()
        kc.decode_kernel(v)
        print(f"[{i + 1}/{len(variants)}] {v.config.label():32s} {time.time() - t:5.1f} s", flush=True)


def main(args) -> None:
    if not args:
        sys.exit(__doc__)
    for tag in (a for a in args if "=" not in a):
        compile_tagged(tag)
    compile_variants([a for a in args if "=" in a])
    print(kernel_cache.stats)


if __name__ == "__main__":
    main(sys.argv[1:])
