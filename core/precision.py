"""Float32 matrix-product precision: `set_float32_matmul_precision("highest" | "high" | "medium")`.

"highest" (the default) computes float32 products in full float32; "high" and "medium" let CUDA use
TF32 tensor cores. `tensorplug.backends.cuda.matmul.allow_tf32` (PyTorch's older switch) is the same
setting seen from the CUDA side, as in PyTorch: it reads True unless the precision is "highest", and
setting it overrides the precision for CUDA (reading the precision back then gives "high" / "highest",
or raises when the two APIs were mixed into a state no precision name describes). The NumPy backend
always multiplies in full precision. Whichever backend serves CUDA gets the TF32 choice at once.
"""
from __future__ import annotations

import warnings

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")
_precision = ["highest"]
_explicit = [False]         # set through set_float32_matmul_precision
_cuda_tf32 = [None]         # backends.cuda.matmul.allow_tf32 when set directly (None: follows the precision)

_MIXED = ("tensorplug is checking the matmul precision without a specific backend name; the current state "
          "mixes the legacy API (backends.cuda.matmul.allow_tf32) and set_float32_matmul_precision to set "
          "it. Use only set_float32_matmul_precision.")


def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matrix products: "highest" (full float32), "high" or
    "medium" (CUDA may use TF32). Any other string warns and changes nothing."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _precision[0], _explicit[0], _cuda_tf32[0] = precision, True, None
    _apply()


def get_float32_matmul_precision() -> str:
    """The current float32 matrix-product precision ("highest" by default)."""
    tf32 = _cuda_tf32[0]
    if tf32 is None:
        return _precision[0]
    implied = "high" if tf32 else "highest"
    if _explicit[0] and implied != _precision[0]:
        raise RuntimeError(_MIXED)
    return implied


def cuda_tf32() -> bool:
    """Whether float32 matmuls on CUDA may use TF32 (backends.cuda.matmul.allow_tf32)."""
    tf32 = _cuda_tf32[0]
    return _precision[0] != "highest" if tf32 is None else tf32


def set_cuda_tf32(allow: bool) -> None:
    if not isinstance(allow, bool):
        raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got {type(allow).__name__}")
    _cuda_tf32[0] = allow
    _apply()


def _apply():
    from . import cuda
    cuda._push_tf32(cuda_tf32())
