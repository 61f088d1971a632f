"""Parameter: a Tensor that a Module registers as one of its learnable parameters.

    p = nn.Parameter(tensorplug.randn(3, 4))     # shares the data, requires_grad=True
    module.weight = p                            # registered by Module.__setattr__

Results of ops on a Parameter are plain Tensors; `.data`, `.detach()` and `.clone()` too.
"""
from __future__ import annotations

from ..tensor import Tensor, _make

__all__ = ["Parameter", "UninitializedParameter", "Buffer", "is_lazy"]


def _as_leaf(data, cls, requires_grad):
    if data is None:
        from ..ops.creation import empty
        data = empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
    t = _make(data._data, data._dtype, data._k, data._dev, cls)
    if data._ver is None:
        data._ver = [0]
    t._ver = data._ver             # the same storage: in-place writes are seen by both
    if requires_grad:
        t.requires_grad = True     # checks the dtype (only floating point can require grad)
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: `Parameter(data=None, requires_grad=True)`.

    It shares `data`'s storage (no copy) and is a leaf of the autograd graph."""
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        return _as_leaf(data, cls, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.__deepcopy__(memo)
        if self.__dict__:
            import copy
            for k, v in self.__dict__.items():
                if k not in ("_rg", "_ver", "_grad", "_acc", "_hooks", "_base", "grad_fn", "_out_nr"):
                    result.__dict__[k] = copy.deepcopy(v, memo)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad, type(self)))


def _rebuild_parameter(data, requires_grad, cls=Parameter):
    return cls(data, requires_grad)


class UninitializedParameter(Parameter):
    """Placeholder for lazily shaped parameters (not materialised by tensorplug's layers)."""
    __slots__ = ()

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from ..ops.creation import empty
        return _as_leaf(empty(0, device=device, dtype=dtype), cls, requires_grad)

    def __repr__(self):
        return "<UninitializedParameter>"

    def materialize(self, shape, device=None, dtype=None):
        from ..ops.creation import empty
        t = empty(*shape, device=device or self.device, dtype=dtype or self.dtype)
        self.data = t
        self.__class__ = Parameter


class Buffer(Tensor):
    """Marks a tensor as a buffer when assigned to a module attribute: `m.stats = nn.Buffer(t)`.

    `persistent=False` keeps it out of `state_dict`."""
    __slots__ = ()

    def __new__(cls, data=None, *, persistent=True):
        t = _as_leaf(data, cls, False)
        if data is not None and data.requires_grad:
            t._rg = True
        t.__dict__["persistent"] = persistent
        return t


def is_lazy(param) -> bool:
    return isinstance(param, UninitializedParameter)
