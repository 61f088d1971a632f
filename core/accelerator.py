"""tensorplug.accelerator: PyTorch's device-generic API for the machine's accelerator.

    import tensorplug as torch
    dev = torch.accelerator.current_accelerator() or torch.device("cpu")
    model.to(dev)

The accelerator is found through the registry, never by name: the device type (other than the host's
"cpu") whose selected backend is available, has indexed devices ("npu:0", "npu:1", ...) and sees at
least one of them; with several, the backend of highest priority. Without one, is_available() is
False, current_accelerator() None, device_count() 0, and what needs a device raises PyTorch's
RuntimeError. A registered backend that is not available counts as absent (PyTorch's
check_available=False would still name a compiled-in accelerator type; here plugins are what is
"compiled in").
"""
from __future__ import annotations

import warnings

from .device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "synchronize", "device_index"]

_NONE = "Cannot access accelerator device when none is available."
_current: dict = {}         # device type -> current index, for backends without set_device()


def _backend():
    """The backend serving the current accelerator, or None."""
    from .dispatch import registry
    registry.ensure_loaded()
    best, seen = None, {"cpu"}
    for b in list(registry.compute.values()):
        dt = b.device_type
        if dt in seen:
            continue
        seen.add(dt)
        try:
            chosen = registry.backend_for(dt)
        except RuntimeError:        # no available backend for this device type
            continue
        if getattr(chosen, "indexed", True) and chosen.device_count() > 0 and (
                best is None or chosen.priority > best.priority):
            best = chosen
    return best


def _required():
    b = _backend()
    if b is None:
        raise RuntimeError(_NONE)
    return b


def is_available() -> bool:
    """True when the machine has an accelerator that tensorplug can use."""
    return _backend() is not None


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as a device without index (`device(type='cuda')`), or None."""
    b = _backend()
    return None if b is None else _device(b.device_type)


def device_count() -> int:
    """The number of the accelerator's devices (0 without an accelerator)."""
    b = _backend()
    return 0 if b is None else int(b.device_count())


def _index_of(b, dev, optional):
    """The device index that `dev` (int, "npu:1", a device, or None when optional) names."""
    if dev is None and optional:
        return _current_index(b)
    if isinstance(dev, bool) or not isinstance(dev, (int, str, _device)):
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{dev}")
    if isinstance(dev, int):
        return dev
    d = dev if isinstance(dev, _device) else _device(dev)
    if d.type != b.device_type:
        raise RuntimeError(f"Accelerator expected: {d} is not a device of the current accelerator, "
                           f"{b.device_type!r}")
    return _current_index(b) if d.index is None else d.index


def _current_index(b) -> int:
    fn = getattr(b, "current_device", None)
    return int(fn()) if fn is not None else _current.get(b.device_type, 0)


def _check_range(b, index):
    n = int(b.device_count())
    if not 0 <= index < n:
        raise RuntimeError(f"invalid device ordinal {index}: {n} {b.device_type} device(s) available")


def current_device_index() -> int:
    """The index of the accelerator's current device."""
    return _current_index(_required())


def set_device_index(device, /) -> None:
    """Make `device` (int, "npu:1" or a device of the accelerator) the current device; a negative
    index does nothing."""
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        return
    b = _required()
    index = _index_of(b, device, optional=False)
    if index < 0:
        return
    _check_range(b, index)
    fn = getattr(b, "set_device", None)
    if fn is not None:
        fn(index)
    else:
        _current[b.device_type] = index


def synchronize(device=None, /) -> None:
    """Wait for the work queued on `device` (default: the current device) to finish."""
    b = _required()
    index = _index_of(b, device, optional=True)
    _check_range(b, index)
    fn = getattr(b, "synchronize", None)
    if fn is not None:          # a backend without it runs synchronously
        fn(index)


def _deprecated(fn, new):
    msg = f"Use `{new}` instead."

    def alias(*args):
        warnings.warn(msg, FutureWarning, stacklevel=2)
        return fn(*args)
    alias.__name__ = alias.__qualname__ = fn.__name__.replace("index", "idx")
    alias.__doc__ = f"(Deprecated) {fn.__doc__}"
    alias.__deprecated__ = msg
    return alias


current_device_idx = _deprecated(current_device_index, "current_device_index")
set_device_idx = _deprecated(set_device_index, "set_device_index")


class device_index:
    """`with device_index(1): ...` makes device 1 of the accelerator current inside, then restores
    the previous one; `device_index(None)` does nothing."""

    def __init__(self, device, /):
        self.idx = device
        self.prev = None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device_index(self.prev)
        return False
