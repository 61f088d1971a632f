"""tensorplug: PyTorch's programming model over pluggable backends.

    import tensorplug as torch
    x = torch.randn(3, requires_grad=True)
    (x * x).sum().backward()
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import threads as _threads  # noqa: E402
_threads._import_numpy_with_default_threads()      # one BLAS thread by default (see core/threads.py)
from . import _malloc  # noqa: E402
_malloc.pin()                                       # glibc malloc keeps step temporaries (core/_malloc.py)

from . import autograd, dtypes  # noqa: E402
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled, inference_mode  # noqa
from .device import device  # noqa: E402
from .dtypes import (bool_ as bool, float16, float32, float64, get_default_dtype, int8, int16,  # noqa
                     int32, int64, promote_types, result_type, set_default_dtype, uint8)
from .dtypes import dtype  # noqa: E402
from .dtypes import bfloat16  # noqa: E402  (NumPy storage from ml_dtypes, imported on first use)
from .tensor import Size, Tensor  # noqa: E402
from ._formatting import set_printoptions  # noqa: E402
from . import ops  # noqa: E402,F401  (attaches Tensor methods)
from .ops._api import *  # noqa: E402,F401,F403

half, float, double = float16, float32, float64
from .dtypes import complex64, complex128  # noqa: E402
cfloat, cdouble = complex64, complex128
short, int, long = int16, int32, int64

from .dispatch import registry as _registry  # noqa: E402


_LAZY_MODULES = ("backends", "dispatch", "testing", "linalg", "nn", "optim", "utils", "serialization", "data", "distributed",
                 "cuda", "special", "compat", "fft")


_LAZY_MODULES += ("accelerator",)
_LAZY_MODULES += ("amp", "cpu")
_LAZY_MODULES += ("onnx",)
_LAZY_MODULES += ("distributions", "multiprocessing", "sparse", "vision")
_LAZY_MODULES += ("fx",)
_LAZY_MODULES += ("profiler",)
_LAZY_MODULES += ("futures",)
_LAZY_MODULES += ("compiler", "_dynamo")
# global settings of the first lines of a script, each loading its module on first use: name -> module
_LAZY_FUNCTIONS = {
    **dict.fromkeys(("set_default_device", "get_default_device"), "device"),
    **dict.fromkeys(("set_float32_matmul_precision", "get_float32_matmul_precision"), "precision"),
    "compile": "compiler",
    **dict.fromkeys(("set_num_threads", "get_num_threads", "set_num_interop_threads",
                     "get_num_interop_threads"), "threads"),
    **dict.fromkeys(("use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
                     "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
                     "get_deterministic_debug_mode"), "deterministic"),
    # mixed precision: torch.autocast, torch.GradScaler and the autocast state functions
    "autocast": "amp.autocast_mode", "GradScaler": "amp.grad_scaler",
    **dict.fromkeys(("is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
                     "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
                     "autocast_increment_nesting", "autocast_decrement_nesting", "is_autocast_cpu_enabled",
                     "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
                     "get_autocast_gpu_dtype", "set_autocast_gpu_dtype"), "amp.state"),
}
# storages: torch.FloatStorage, ... as checkpoints name them
_LAZY_FUNCTIONS.update(dict.fromkeys((
    "TypedStorage", "UntypedStorage", "ByteStorage", "CharStorage", "ShortStorage", "IntStorage", "LongStorage",
    "HalfStorage", "FloatStorage", "DoubleStorage", "BoolStorage", "BFloat16Storage", "ComplexFloatStorage",
    "ComplexDoubleStorage", "QUInt8Storage", "QInt8Storage", "QInt32Storage", "QUInt4x2Storage",
    "QUInt2x4Storage"), "storage"))
# sparse COO tensors: torch.sparse_coo_tensor, torch.spmm
_LAZY_FUNCTIONS.update(dict.fromkeys(("sparse_coo_tensor", "spmm"), "sparse"))
# samplers of torch.distributions with private names (the lazy family ops.random_distributions)
_LAZY_FUNCTIONS.update(dict.fromkeys(("_standard_gamma", "_standard_gamma_grad", "_sample_dirichlet",
                                      "_dirichlet_grad"), "ops.random_distributions"))
# memory layouts: torch.strided, torch.layout, ...
_LAZY_FUNCTIONS.update(dict.fromkeys(("layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                                      "sparse_bsc", "_mkldnn", "jagged"), "_layout"))


def __getattr__(name):
    # modules that load on first use (keeps `import tensorplug` light)
    import importlib
    if name in _LAZY_FUNCTIONS:
        obj = globals()[name] = getattr(importlib.import_module(f"{__name__}.{_LAZY_FUNCTIONS[name]}"), name)
        return obj
    if name in ("save", "load"):
        from . import serialization
        return getattr(serialization, name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if not name.startswith("_"):             # the op families that load on first use
        ops.load_lazy()
        from .ops import _api
        obj = _api.__dict__.get(name)
        if obj is not None:
            globals()[name] = obj
            return obj
    raise AttributeError(f"module 'tensorplug' has no attribute {name!r}")
