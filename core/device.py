"""Device objects: `device("cpu")`, `device("cuda", 0)`, `device("cuda:1")`, `device(0)` (index 0 of
the current accelerator, as in PyTorch); the default device of the factory functions
(`set_default_device`, `get_default_device`, `with device("cuda"): ...`).

Devices are interned, so `a.device is b.device` is the cheap same-device test.
The frontend never interprets a device type; the registry maps it to a backend.
"""
from __future__ import annotations

__all__ = ["device", "as_device", "set_default_device", "get_default_device"]

_interned: dict = {}


class device:
    __slots__ = ("type", "index", "_str")

    def __new__(cls, type_or_str, index=None):
        if isinstance(type_or_str, device):
            if index is not None:
                raise ValueError("device(): index given twice")
            return type_or_str
        key = (type_or_str, index)
        d = _interned.get(key)
        if d is not None:
            return d
        if not isinstance(type_or_str, str):
            if type_or_str.__class__ is int and index is None:
                return _accelerator_device(type_or_str)
            raise TypeError(f"device() expects a string such as 'cpu' or 'cuda:0', got {type_or_str!r}")
        spec = type_or_str.strip()
        dtype_, _, idx = spec.partition(":")
        if idx:
            if index is not None:
                raise ValueError(f"device(): type string {spec!r} already names an index")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: {spec!r}")
            index = int(idx)
        if not dtype_ or not dtype_.replace("_", "").isalnum():
            raise RuntimeError(f"Invalid device string: {spec!r}")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must be a non-negative integer, got {index!r}")
        canonical = (dtype_, index)
        d = _interned.get(canonical)
        if d is None:
            d = object.__new__(cls)
            d.type, d.index = dtype_, index
            d._str = dtype_ if index is None else f"{dtype_}:{index}"
            _interned[canonical] = d
        _interned[key] = d
        return d

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self._str

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError):
                return False
        return self is other

    def __hash__(self):
        return hash(self._str)

    def __reduce__(self):
        return (device, (self._str,))

    # `with device("cuda"): ...` makes it the default device of the factory functions inside
    def __enter__(self):
        _entered.append(_default[0])
        _default[0] = self
        return self

    def __exit__(self, *exc):
        _default[0] = _entered.pop()
        return False


def as_device(obj) -> device:
    return obj if obj.__class__ is device else device(obj)


def _accelerator_device(index: int) -> device:
    """device(0): an index alone names a device of the current accelerator (never cached: plugins
    registered later may add one)."""
    if index < 0:
        raise RuntimeError("Device index must not be negative")
    from .accelerator import current_accelerator
    acc = current_accelerator()
    if acc is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return device(acc.type, index)


# The factory functions' device when none is given (read once per call by ops.creation.resolve_device).
# Process-wide; PyTorch's is per thread.
_default = [device("cpu")]
_entered: list = []             # the defaults that `with device(...)` blocks replaced


def set_default_device(dev) -> None:
    """Make `dev` (a device, "cuda", "cuda:1", an index, or None for cpu) the device of tensors made by
    factory functions (zeros, randn, tensor, arange, ...) that get no device argument."""
    _default[0] = device("cpu") if dev is None else as_device(dev)


def get_default_device() -> device:
    """The device a factory function without a device argument allocates on (with its index)."""
    from .ops.creation import resolve_device
    return resolve_device(None)[1]
