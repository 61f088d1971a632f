"""tensorplug.backends.cuda: PyTorch's CUDA switches (torch.backends.cuda).

    import tensorplug as torch
    torch.backends.cuda.matmul.allow_tf32 = True      # = torch.set_float32_matmul_precision("high")

`matmul.allow_tf32` is the float32 matmul precision seen from CUDA (tensorplug.precision) and reaches
the backend serving "cuda" at once. The reduced-precision-reduction switches and the
scaled-dot-product-attention kernel switches are recorded and read back as in PyTorch; tensorplug's
CUDA backend has a single kernel for each (CuPy's float16 matmul, the math attention), which they do
not change.
"""
from __future__ import annotations

from tensorplug import precision as _precision

__all__ = ["matmul", "is_built", "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
           "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled",
           "enable_cudnn_sdp"]

DEVICE_TYPE = "cuda"


def is_built() -> bool:
    """True when a backend for "cuda" is registered and its library loads (CuPy for the built-in one),
    whether or not this machine has a GPU."""
    from tensorplug.dispatch import registry
    for b in registry.candidates(DEVICE_TYPE):
        if b.is_available()[0]:
            return True
        load = getattr(b, "modules", None)      # the CuPy backend: its array modules import?
        if load is not None:
            try:
                load()
                return True
            except Exception:   # noqa: BLE001 - ImportError, or a CUDA library failing to load
                pass
    return False


_REDUCED = {"allow_fp16_reduced_precision_reduction": True, "allow_bf16_reduced_precision_reduction": True}


class cuBLASModule:
    """`matmul`: cuBLAS's precision switches (unknown names raise AttributeError, as in PyTorch)."""

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _precision.cuda_tf32()
        if name in _REDUCED:
            return _REDUCED[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _precision.set_cuda_tf32(value)
            return
        if name not in _REDUCED:
            raise AttributeError(f"Unknown attribute {name}")
        # a bool, or (allow reduced precision, allow split-K) whose first element is the setting
        ok = isinstance(value, bool) or (isinstance(value, (tuple, list)) and 0 < len(value) <= 2
                                         and all(isinstance(v, bool) for v in value))
        if not ok:
            raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value)}")
        _REDUCED[name] = value if isinstance(value, bool) else value[0]


matmul = cuBLASModule()

# scaled_dot_product_attention kernel choices
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _sdp_switch(kind):
    def enabled() -> bool:
        return _SDP[kind]

    def enable(enabled: bool) -> None:
        if not isinstance(enabled, bool):
            raise RuntimeError(f"enable_{kind}_sdp expects a bool, but got {type(enabled).__name__}")
        _SDP[kind] = enabled
    enabled.__name__, enable.__name__ = f"{kind}_sdp_enabled", f"enable_{kind}_sdp"
    enabled.__doc__ = f"Whether the {kind} scaled-dot-product-attention kernel may be chosen (recorded)."
    enable.__doc__ = f"Allow or forbid the {kind} scaled-dot-product-attention kernel (recorded)."
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _sdp_switch("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _sdp_switch("mem_efficient")
math_sdp_enabled, enable_math_sdp = _sdp_switch("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _sdp_switch("cudnn")
