"""Device objects: `device("cpu")`, `device("cuda", 0)`, `device("cuda:1")`.

Devices are interned, so `a.device is b.device` is the cheap same-device test.
The frontend never interprets a device type; the registry maps it to a backend.
"""
from __future__ import annotations

__all__ = ["device", "as_device"]

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


def as_device(obj) -> device:
    return obj if obj.__class__ is device else device(obj)
