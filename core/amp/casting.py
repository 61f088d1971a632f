"""What a listed op does under autocast: look up its policy for the device type of its tensors, cast
the eligible tensor arguments, and run it with autocast suspended, so that the ops it is made of run
in the dtypes it was given (PyTorch runs a listed op's kernel below its autocast layer the same way).

Eligible: floating-point tensors on the autocast device type, except float64; integer, bool and
float64 tensors pass unchanged. Casts are differentiable (`Tensor.to`), so gradients reach float32
leaves in float32. A call with `out=` is not autocast (PyTorch's rule).

Cache: within an autocast region the lower-precision cast of a float32 leaf that requires grad (a
weight) is made once and reused, until the outermost region exits (PyTorch's heuristic). An entry is
remade when its leaf was modified in place. Like PyTorch's, the cached cast's node saves nothing, so
each backward through it works (two losses of one region may be backpropagated one after the other).
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd import grad_mode
from ..autograd.graph import Node
from ..tensor import Tensor
from . import op_lists
from .state import _State, get_autocast_dtype, state

_F32, _F64 = _dt.float32, _dt.float64
_lists = (list, tuple)


def _device_type(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            return a._dev.type
        if isinstance(a, _lists):
            for b in a:
                if isinstance(b, Tensor):
                    return b._dev.type
    for a in kwargs.values():
        if isinstance(a, Tensor):
            return a._dev.type
    return None


def _eligible(t, dev):
    return isinstance(t, Tensor) and t._dtype.category == 2 and t._dtype is not _F64 and t._dev.type == dev


def _widest(args, kwargs, dev, lower):
    """PROMOTE: float32 if an eligible input is float32, else the autocast dtype; a third floating
    dtype among the inputs is PyTorch's error."""
    cur = lower
    for a in (*args, *kwargs.values()):
        for t in (a if isinstance(a, _lists) else (a,)):
            if not _eligible(t, dev):
                continue
            d = t._dtype
            if cur is _F32 or d is _F32:
                cur = _F32
            elif not (cur is lower and d is lower):
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return cur


def _cast(t, to, dev, lower):
    if not _eligible(t, dev) or t._dtype is to:
        return t
    if (to is lower and t._dtype is _F32 and t._rg and t.grad_fn is None and t._base is None
            and state.cache_enabled):
        return _cached(t, to)
    return t.to(to)


_VJP = Node.__dict__["vjp"]


class _KeptNode(Node):
    """The node of a cached cast: the engine's release of its rule after a backward is ignored
    (the rule holds no tensors), so later backwards through the shared cast still work."""
    __slots__ = ()
    vjp = property(_VJP.__get__, lambda self, v: v is None or _VJP.__set__(self, v))


def _version(t):
    return t._ver[0] if t._ver is not None else 0


def _cached(t, to):
    key = (id(t), to, grad_mode.state.enabled)
    hit = state.cache.get(key)
    if hit is not None and hit[1] == _version(hit[0]):
        return hit[2]
    cast = t.to(to)
    if cast.grad_fn is not None:
        cast.grad_fn.__class__ = _KeptNode
    state.cache[key] = (t, _version(t), cast)      # holding t keeps id(t) from being reused
    return cast


def _cast_args(args, kwargs, to, dev, lower):
    out = []
    for a in args:
        if isinstance(a, _lists):
            a = type(a)(_cast(b, to, dev, lower) for b in a)
        else:
            a = _cast(a, to, dev, lower)
        out.append(a)
    return out, {k: _cast(v, to, dev, lower) for k, v in kwargs.items()}


def _policy(name, args, kwargs):
    dev = _device_type(args, kwargs)
    if dev is None or not state.enabled.get(dev) or kwargs.get("out") is not None:
        return dev, None
    p = op_lists.PROFILES.get(dev)
    return dev, (p.ops.get(name) if p is not None else None)


def listed(name, args):
    return _policy(name, args, {})[1] is not None


def _apply(name, args, kwargs):
    dev, policy = _policy(name, args, kwargs)
    if policy is None:
        return args, kwargs
    lower = get_autocast_dtype(dev)
    if policy == op_lists.LOWER:
        to = lower
    elif policy == op_lists.FP32:
        to = None if kwargs.get("dtype") is not None else _F32
    elif policy == op_lists.PROMOTE:
        to = _widest(args, kwargs, dev, lower)
    else:
        raise RuntimeError(op_lists.BCE_BANNED)
    return _cast_args(args, kwargs, to, dev, lower) if to is not None else (args, kwargs)


def cast(name, args):
    return tuple(_apply(name, args, {})[0])


def run(name, fn, args, kwargs=None):
    """fn(*args, **kwargs) under the policy listed for `name`, with autocast suspended inside."""
    args, kwargs = _apply(name, args, kwargs or {})
    state.on = False
    try:
        return fn(*args, **kwargs)
    finally:
        state.on = True


_State.run = staticmethod(run)          # later calls skip the import in state.run / state.listed
_State.listed = staticmethod(listed)
_State.cast = staticmethod(cast)
