"""`torch.autocast` (= `torch.amp.autocast`): a context manager and decorator that makes the listed
ops (op_lists.py) run in a lower precision, or in float32, on one device type; and `custom_fwd` /
`custom_bwd` for the forward and backward of custom autograd Functions.

    with tensorplug.autocast("cpu"):                    # bfloat16 on the CPU, float16 on CUDA
        y = model(x)                                    # linear/conv in bfloat16, losses in float32
    loss = loss_fn(y.float(), target)
    loss.backward()                                     # float32 leaves get float32 gradients
"""
from __future__ import annotations

import functools
import warnings

from .. import dtypes as _dt
from . import state as _st
from .op_lists import profile

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports `device_type` (it has op lists for it)."""
    from .op_lists import PROFILES
    return device_type in PROFILES


def _usable(device_type) -> tuple:
    """(usable, backend): whether a backend with a device serves `device_type` here."""
    from ..dispatch import registry
    try:
        b = registry.backend_for(device_type)
    except RuntimeError:
        return False, None
    count = getattr(b, "device_count", None)
    return (count() > 0 if callable(count) else True), b


class autocast:
    """Autocast the listed ops on `device_type` to `dtype` (default: `get_autocast_dtype(device_type)`,
    bfloat16 on the CPU, float16 on CUDA). `enabled=False` runs the region without autocast (nested
    regions can switch it off); `cache_enabled` keeps the casts of weights for the region."""

    def __init__(self, device_type: str, dtype: _dt.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = _st.get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        prof = profile(device_type)
        self._cache_enabled = _st.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if prof.unavailable is not None and not _usable(device_type)[0]:
                warnings.warn(prof.unavailable, stacklevel=2)
                enabled = False
            elif not prof.accepts(self.fast_dtype):
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling "
                              f"autocast.\n{name} Autocast only supports dtypes of "
                              + ", ".join(prof.accepted_names()) + " currently.", stacklevel=2)
                enabled = False
            elif prof.dtypes is None:
                _check_backend_dtype(device_type, self.fast_dtype)
        self._enabled = enabled
        self._saved = []                # the states to restore, one per active entry of this object

    def __enter__(self):
        self.prev_cache_enabled = _st.is_autocast_cache_enabled()
        self.prev = _st.is_autocast_enabled(self.device)
        self.prev_fastdtype = _st.get_autocast_dtype(self.device)
        self._saved.append((self.prev, self.prev_fastdtype, self.prev_cache_enabled))
        _st.set_autocast_enabled(self.device, self._enabled)
        _st.set_autocast_dtype(self.device, self.fast_dtype)
        _st.autocast_increment_nesting()
        _st.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        # leaving the outermost region drops the cached casts of the weights
        if _st.autocast_decrement_nesting() == 0:
            _st.clear_autocast_cache()
        prev, prev_dtype, prev_cache = self._saved.pop()
        _st.set_autocast_enabled(self.device, prev)
        _st.set_autocast_dtype(self.device, prev_dtype)
        _st.set_autocast_cache_enabled(prev_cache)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            f"Did you mean to use autocast as a context manager? For example:\n"
                            f"    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _check_backend_dtype(device_type, dtype):
    """A device type accepting any autocast dtype still needs a backend that has it."""
    b = _usable(device_type)[1]
    names = getattr(b, "dtypes", None)
    if names is not None and dtype.name not in {getattr(d, "name", d) for d in names}:
        raise RuntimeError(f"Current {device_type.upper()} Device does not support {dtype.name}. Please "
                           f"switch dtype to float16.")


# -- custom autograd Functions ---------------------------------------------------------------------------
def _cast_inputs(value, device_type, dtype):
    """Floating tensors on `device_type` (not float64) in value, cast to dtype; containers rebuilt."""
    from ..tensor import Tensor
    if isinstance(value, Tensor):
        ok = value._dtype.category == 2 and value._dev.type == device_type and value._dtype is not _dt.float64
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast_inputs(k, device_type, dtype): _cast_inputs(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, device_type, dtype) for v in value)
    return value


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: _dt.dtype | None = None):
    """Decorate a custom Function's `forward`: with `cast_inputs`, inside an autocast region for
    `device_type` the floating inputs are cast to it and forward runs with autocast off; without,
    forward runs under the current autocast state. Either way `custom_bwd` replays that state."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _st.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = _st.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not _st.is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast_inputs(args, device_type, cast_inputs),
                       **_cast_inputs(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom Function's `backward` so it runs with the autocast state of its forward."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
