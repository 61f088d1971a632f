"""tensorplug.backends.cudnn: PyTorch's cuDNN switches (torch.backends.cudnn).

    import tensorplug as torch
    torch.backends.cudnn.benchmark = True

tensorplug's CUDA backend does not use cuDNN (its convolutions are CuPy kernels), so is_available() is
False and version() None, as in PyTorch without cuDNN; the switches are kept and checked as PyTorch
keeps them (bools; benchmark_limit and other names are plain attributes) and change no kernel.
"""
from __future__ import annotations

from ._flags import flags_context, install

__all__ = ["is_available", "version", "is_acceptable", "flags", "enabled", "benchmark", "deterministic",
           "allow_tf32", "benchmark_limit"]


def is_available() -> bool:
    """Whether cuDNN can be used: never by tensorplug's backends."""
    return False


def version():
    """cuDNN's version, None without cuDNN."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take this tensor (never without cuDNN)."""
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """`with flags(enabled=..., ...)`: these switches inside the block, the old ones after it
    (benchmark_limit only matters with cuDNN and is left alone)."""
    import sys
    return flags_context(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                         deterministic=deterministic, allow_tf32=allow_tf32)


install(__name__, {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
                   "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cudnn"})
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True           # independent of set_float32_matmul_precision, as in PyTorch
benchmark_limit = None      # None without cuDNN
