import os

import pytest
import torch

# Compiling without a GPU needs a target; the kernels are sm_90a.
if not torch.cuda.is_available():
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def hopper_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible (the decode kernels need a Hopper sm_90 GPU)"
    cap = torch.cuda.get_device_capability()
    if cap != (9, 0):
        return f"GPU {torch.cuda.get_device_name()} is sm_{cap[0]}{cap[1]}; the kernels need Hopper sm_90"
    return None


def pytest_collection_modifyitems(config, items):
    reason = hopper_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
