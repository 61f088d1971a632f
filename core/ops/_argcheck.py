"""PyTorch's TypeError for a non-Tensor where an op needs one, for the public functions.

Ops read `x._k`, `x.ndim` ... of their tensor arguments without checking types first (a check per
call would cost every call). When such a read fails with AttributeError on an argument that is not a
Tensor, the public wrapper turns it into `sin(): argument 'input' (position 1) must be Tensor, not
str`. The wrapper costs one extra call; AttributeErrors from anything else pass through unchanged.
"""
from __future__ import annotations

import functools
import re

from ..tensor import Tensor

_NO_ATTR = re.compile(r"^'(\w+)' object has no attribute")


def _parameter_names(fn):
    import inspect              # only on the error path: inspect is slow to import
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _culprit(fn, args, kwargs, type_name):
    """(name, position or None, value) of the first non-Tensor argument of type `type_name`."""
    names = _parameter_names(fn)
    for i, a in enumerate(args):
        if type(a).__name__ == type_name and not isinstance(a, Tensor):
            return (names[i] if i < len(names) else f"arg{i}"), i + 1, a
    for k, a in kwargs.items():
        if type(a).__name__ == type_name and not isinstance(a, Tensor):
            return k, None, a
    return None


_WRAPPED: dict = {}          # one wrapper per function, so aliases stay identical (torch.trapz is trapezoid)


def tensor_typed(fn, name=None):
    """fn, raising PyTorch's TypeError when a non-Tensor argument breaks it with AttributeError."""
    w = _WRAPPED.get(fn)
    if w is None:
        w = _WRAPPED[fn] = _wrap(fn, name or fn.__name__)
    return w


def _wrap(fn, name):

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as e:
            m = _NO_ATTR.match(str(e))
            found = m and _culprit(fn, args, kwargs, m.group(1))
            if not found:
                raise
            arg, pos, value = found
            where = f" (position {pos})" if pos else ""
            raise TypeError(f"{name}(): argument '{arg}'{where} must be Tensor, not {type(value).__name__}") from None
    return wrapper
