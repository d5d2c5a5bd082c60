"""Compile into the kernel cache ($CUTE_DSA_KERNEL_CACHE) the kernels that
tests/test_gpu_decode.py::test_every_tunable_config launches for the tunable configs carrying a
tag (e.g. `pf`), with no GPU (sm_90a), so a device call loads them instead of compiling them there.

    CUTE_DSA_KERNEL_CACHE=/tmp/kcache_build python benchmarks/precompile_tests.py pf
"""

import os
import sys
import time

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import torch  # noqa: E402

from cute_dsa.api import launch_spec, spec_kernels, squeeze_kv_head  # noqa: E402
from cute_dsa.checks import DecodeProblem  # noqa: E402
from cute_dsa.testing import TUNABLE_CONFIG_SPLITS, tunable_config_inputs  # noqa: E402
from cute_dsa.tune import config_space  # noqa: E402


def main(tag: str) -> None:
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


if __name__ == "__main__":
    main(sys.argv[1])
