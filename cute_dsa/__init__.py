"""cute_dsa: DSA selected-index NoPE MLA paged FP8 decode for Hopper, in the CuTe DSL."""

from . import reference, torch_ops  # torch_ops: registers torch.ops.cute_dsa.*
from .api import decode_workspace_bytes, dsa_decode
from .kernel_config import DecodeKernelConfig
from .model_config import GLM_5_3, SparseMLAConfig
from .resolve import resolve_indices

__version__ = "0.1.0"
__all__ = ["dsa_decode", "decode_workspace_bytes", "resolve_indices", "reference", "SparseMLAConfig", "GLM_5_3", "DecodeKernelConfig", "__version__"]
