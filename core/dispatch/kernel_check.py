"""Kernel results checked against the frontend's expectation (array type, shape, dtype, device).

The frontend trusts what a kernel returns: a `matmul` of the wrong shape or a float64 result for
float32 inputs would otherwise surface in a later, unrelated op. So the native kernels of every
backend that is not built in are wrapped, once, when the registry activates the backend; each
wrapper computes the expected result from the inputs (broadcast shapes, reduction shapes, matmul
shapes, the dtype rules of backend_api's docstring) and raises `KernelContractError` at once.

- Built-in backends (the classes of `tensorplug.backends`) are left raw, so their hot path stays as
  it is; `TENSORPLUG_CHECK_KERNELS=1` checks them too, `=0` checks no backend.
- The frontend's pointwise binary ops (operators and functions) call the table's `__check__` entry
  (`frontend_binary`), handing it the broadcast shape they computed for their own broadcasting
  check: one shape compare and one dtype identity test per op (~0.15 us, bench/tiny_op.py), where
  the wrapper would read the three arrays' shapes again. Built-in tables hold `__check__: None`.
- Pointwise wrappers compare by identity first (result type, dtype object, shape tuples) and take a
  careful path (which also compares `.device`) only when that fails: reading `.device` would double
  what a checked op costs.
- Decompositions are not wrapped (their primitives are); neither are the kernels that return
  nothing (assign, index_put, scatter*) or an opaque generator state.
- A kernel without a rule here (the optional families) is checked for array type and a dtype the
  backend declares, for each array it returns.
"""
from __future__ import annotations

import math
import os

import numpy as np

from .backend_api import BINARY, UNARY

ENV = "TENSORPLUG_CHECK_KERNELS"

_BOOL_UNARY = frozenset(("logical_not", "isnan", "isinf", "isfinite"))
_BOOL_BINARY = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"))
_UNARY = frozenset((*UNARY, "sigmoid", "log1p", "expm1", "sinh", "cosh", "asin", "acos", "atan",
                    "isinf", "isfinite"))
_UNCHECKED = frozenset(("assign", "index_put", "scatter", "scatter_add", "rng_new", "rng_get_state",
                        "rng_set_state"))
_REAL_OF = {"complex64": "float32", "complex128": "float64"}
# creation kernels that tell the backend's array type (from_numpy may return the caller's own array)
_LEARN_TYPE = frozenset(("full", "arange", "uniform", "normal"))
_NUMPY_PROTO = np.empty(0)


class KernelContractError(RuntimeError):
    """A backend kernel returned something other than what the backend contract promises."""


# -- when to check -----------------------------------------------------------------------------------
def _env_choice():
    """True / False when TENSORPLUG_CHECK_KERNELS is set (1/0, true/false, yes/no, on/off), else None."""
    if not os.environ.get(ENV, "").strip():
        return None
    from .config import env_bool
    return env_bool(ENV)


def is_builtin(backend) -> bool:
    """Whether `backend` is one of tensorplug's own (its class is defined in tensorplug.backends)."""
    return type(backend).__module__.startswith("tensorplug.backends.")


def wanted(backend) -> bool:
    choice = _env_choice()
    return (not is_builtin(backend)) if choice is None else choice


def install(backend) -> bool:
    """Wrap `backend`'s native kernels in its kernel table (once) when it is to be checked."""
    if backend.__dict__.get("_kernel_check") is not None or not wanted(backend):
        return False
    ctx = _Context(backend)
    backend._kernel_check = ctx
    table = backend.kernels
    native = backend._native if backend._native is not None else table
    _wrap_table(table, native, ctx)
    for t in backend.__dict__.get("_device_tables", {}).values():
        _wrap_table(t, native, ctx)
    build = backend.device_kernels

    def device_kernels(index):          # per-device tables a backend builds itself get wrapped too
        t = build(index)
        _wrap_table(t, native, ctx)
        return t
    backend.device_kernels = device_kernels
    return True


def _wrap_table(table, native, ctx):
    # the frontend's pointwise binary ops call the table's kernels through its checker (one shape
    # compare: the frontend knows the broadcast shape); other callers get the wrappers
    table["__check__"] = {name: frontend_binary(name, table[name], ctx) for name in BINARY if name in table}
    for name in list(native):
        fn = table.get(name)
        if fn is None or name in _UNCHECKED or getattr(fn, "__kernel_check__", False) or not callable(fn):
            continue
        table[name] = wrap(name, fn, ctx)


def wrap(name, fn, ctx):
    if name in _UNARY:
        w = _unary(name, fn, ctx)
    elif name in BINARY:
        w = _binary(name, fn, ctx)
    else:
        w = _generic(name, fn, ctx, RULES.get(name, _any))
    w.__name__ = f"checked_{name}"
    w.__wrapped__ = fn
    w.__kernel_check__ = True
    return w


# -- the per-backend context and the careful path ------------------------------------------------------
class _Context:
    def __init__(self, backend):
        self.backend = getattr(backend, "name", "?")
        try:
            self.dtypes = frozenset(backend.dtypes)
        except Exception:  # noqa: BLE001 - a dtypes property that raises: registry reports it elsewhere
            self.dtypes = frozenset()
        self.atype = None               # the backend's array type, learned from its creation kernels
        self.bool_dt = object()         # the backend's bool dtype object, learned on the careful path

    def verify(self, name, r, args, kwargs, ref, shape, dtype):
        """Raise unless r is an array of ref's type (else the learned type), `shape` and dtype name
        `dtype` (None: not known; then the dtype must be one the backend declares) on ref's device."""
        want_t = type(ref) if ref is not None and _is_array(ref) else self.atype
        problems = []
        if not _is_array(r):
            problems.append("not an array")
        else:
            if want_t is not None and not isinstance(r, want_t):
                problems.append("wrong array type")
            if shape is not None and tuple(r.shape) != shape:
                problems.append("wrong shape")
            got = _dname(r.dtype)
            if dtype is not None and got != dtype:
                problems.append("wrong dtype")
            elif dtype is None and self.dtypes and got not in self.dtypes:
                problems.append("a dtype the backend does not declare")
            if ref is not None and _is_array(ref):
                dr, dx = getattr(r, "device", None), getattr(ref, "device", None)
                if dr is not None and dx is not None and dr != dx:
                    problems.append("wrong device")
            if not problems:
                if got == "bool":
                    self.bool_dt = r.dtype
                if self.atype is None and name in _LEARN_TYPE:
                    self.atype = type(r)
                return r
        want = f"{_tname(want_t) if want_t else 'an array'} {dtype or 'of a declared dtype'}" + \
               (f"[{', '.join(map(str, shape))}]" if shape is not None else " of any shape")
        if ref is not None and "wrong device" in problems:
            want += f" on device {ref.device}"
        raise KernelContractError(
            f"kernel {name!r} of backend {self.backend!r} returned {_describe(r)} ({', '.join(problems)}) "
            f"for inputs ({_describe_args(args, kwargs)}); expected {want}")

    def verify_many(self, name, r, args, kwargs, ref, wants):
        """A tuple result: each element against (shape, dtype) of `wants` (None: generic rule)."""
        if not isinstance(r, (tuple, list)) or (wants is not None and len(r) != len(wants)):
            raise KernelContractError(
                f"kernel {name!r} of backend {self.backend!r} returned {_describe(r)} for inputs "
                f"({_describe_args(args, kwargs)}); expected a tuple of {len(wants) if wants else 'some'} arrays")
        for i, e in enumerate(r):
            if wants is None and not _is_array(e):
                continue                     # generic: only the arrays are checked
            shape, dtype = wants[i] if wants is not None else (None, None)
            self.verify(f"{name}[{i}]", e, args, kwargs, ref, shape, dtype)
        return r


def frontend_binary(name, fn, ctx):
    """`fn` as the frontend's pointwise binary ops call it on a checked table: run(x, y, shape), where
    `shape` is the broadcast of two arrays' shapes, known to the frontend (None when an operand is a
    Python scalar). One shape compare and one dtype identity test when all is well."""
    boolean = name in _BOOL_BINARY

    def run(x, y, shape):
        r = fn(x, y)
        c = r.__class__
        try:
            if c is x.__class__:
                if r.shape == (x.shape if shape is None else shape) and \
                        r.dtype is (ctx.bool_dt if boolean else x.dtype):
                    return r
            elif c is y.__class__ and shape is None and r.shape == y.shape and \
                    r.dtype is (ctx.bool_dt if boolean else y.dtype):
                return r
        except AttributeError:              # host scalars: the careful path decides
            pass
        return _binary_slow(name, r, x, y, None, ctx, boolean)
    run.__name__ = f"checked_{name}"
    return run


def _is_array(x):
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _dname(d):
    return getattr(d, "name", None) or str(d)


def _tname(t):
    mod = t.__module__
    return t.__qualname__ if mod == "builtins" else f"{mod.split('.')[0]}.{t.__qualname__}"


def _describe(x):
    if _is_array(x):
        try:
            return f"{_tname(type(x))} {_dname(x.dtype)}[{', '.join(map(str, x.shape))}]"
        except Exception:  # noqa: BLE001 - a broken shape attribute
            return _tname(type(x))
    if isinstance(x, (tuple, list)):
        inner = ", ".join(_describe(e) for e in x[:6]) + (", ..." if len(x) > 6 else "")
        return (f"({inner},)" if len(x) == 1 else f"({inner})") if isinstance(x, tuple) else f"[{inner}]"
    if x is None or isinstance(x, (bool, int, float, complex, str)) or x is Ellipsis:
        r = repr(x)
        return r if len(r) <= 24 else type(x).__name__
    if isinstance(x, slice):
        return f"slice({x.start}, {x.stop}, {x.step})"
    return _tname(type(x))


def _describe_arg(x):
    if _is_array(x):
        try:
            return f"{_dname(x.dtype)}[{', '.join(map(str, x.shape))}]"
        except Exception:  # noqa: BLE001
            return _tname(type(x))
    return _describe(x)


def _describe_args(args, kwargs):
    parts = [_describe_arg(a) for a in args]
    parts += [f"{k}={_describe_arg(v)}" for k, v in kwargs.items() if v is not None]
    return ", ".join(parts)


# -- pointwise: identity fast paths ------------------------------------------------------------------
def _unary(name, fn, ctx):
    res = "bool" if name in _BOOL_UNARY else "real" if name == "abs" else None

    def checked(x, out=None):
        r = fn(x) if out is None else fn(x, out=out)
        try:
            if r.__class__ is x.__class__ and r.shape == x.shape and \
                    (r.dtype is (ctx.bool_dt if res == "bool" else x.dtype)):
                return r
        except AttributeError:              # host scalars: the careful path decides
            pass
        if not _is_array(x):
            return r
        dt = _dname(x.dtype)
        if res is not None:
            dt = "bool" if res == "bool" else _REAL_OF.get(dt, dt)
        return ctx.verify(name, r, (x,), {"out": out}, x, tuple(x.shape), dt)
    return checked


def _binary(name, fn, ctx):
    boolean = name in _BOOL_BINARY

    def checked(x, y, out=None):
        r = fn(x, y) if out is None else fn(x, y, out=out)
        c = x.__class__
        try:
            if c is y.__class__ and r.__class__ is c and r.dtype is (ctx.bool_dt if boolean else x.dtype):
                s = r.shape
                if x.shape == s and y.shape == s:
                    return r
        except AttributeError:
            pass
        return _binary_slow(name, r, x, y, out, ctx, boolean)
    return checked


def _binary_slow(name, r, x, y, out, ctx, boolean):
    xa, ya = _is_array(x), _is_array(y)
    if not (xa or ya):
        return r                             # two host scalars: nothing to compare against
    ref = x if xa else y
    shape = broadcast_shapes(tuple(x.shape) if xa else (), tuple(y.shape) if ya else ())
    dt = "bool" if boolean else _dname(ref.dtype)
    return ctx.verify(name, r, (x, y), {"out": out}, ref, shape, dt)


# -- the other kernels: a rule per kernel --------------------------------------------------------------
def _generic(name, fn, ctx, rule):
    def checked(*args, **kwargs):
        r = fn(*args, **kwargs)
        try:
            ref, want = rule(*args, **kwargs)
        except Exception:  # noqa: BLE001 - inputs the rule does not understand: check the kind only
            ref, want = None, None
        if isinstance(want, list):
            return ctx.verify_many(name, r, args, kwargs, ref, want)
        if want is not None:
            return ctx.verify(name, r, args, kwargs, ref, want[0], want[1])
        if _is_array(r):
            return ctx.verify(name, r, args, kwargs, ref, None, None)
        return ctx.verify_many(name, r, args, kwargs, ref, None) if isinstance(r, (tuple, list)) else r
    return checked


def broadcast_shapes(a, b):
    if a == b:
        return a
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(p if q == 1 else q for p, q in zip(a, b))


def _tup(shape):
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def _same(x, *rest, **kw):
    return x, (tuple(x.shape), _dname(x.dtype))


def _reduced(x, axes, keepdims):
    nd = len(x.shape)
    if axes is None:
        return (1,) * nd if keepdims else ()
    axes = {a % max(nd, 1) for a in ((axes,) if isinstance(axes, int) else axes)}
    return tuple(1 if i in axes else n for i, n in enumerate(x.shape) if keepdims or i not in axes)


def _r_from_numpy(a):
    # a NumPy scalar or subclass may come back as it is
    return (None if a.__class__ is np.ndarray else a), (tuple(a.shape), _dname(a.dtype))


def _r_to_numpy(x):
    return _NUMPY_PROTO, (tuple(x.shape), _dname(x.dtype))      # a prototype: any numpy.ndarray


def _r_full(shape, value, dtype):
    return None, (_tup(shape), dtype)


def _r_arange(start, stop, step, dtype):
    return None, ((max(0, math.ceil((stop - start) / step)),), dtype)


def _r_astype(x, dtype):
    return x, (tuple(x.shape), dtype)


def _r_random(state, shape, dtype):
    return None, (_tup(shape), dtype)


def _r_randint(state, low, high, shape, dtype):
    return None, (_tup(shape), dtype)


def _r_randperm(state, n, dtype):
    return None, ((int(n),), dtype)


def _r_sampler(state, p, *rest):
    return p, (tuple(p.shape), _dname(p.dtype))


def _r_binomial(state, count, prob):
    return count, (broadcast_shapes(tuple(count.shape), tuple(prob.shape)), _dname(count.dtype))


def _r_where(c, x, y):
    ref = x if _is_array(x) else y if _is_array(y) else None
    shape = tuple(c.shape)
    for v in (x, y):
        if _is_array(v):
            shape = broadcast_shapes(shape, tuple(v.shape))
    return ref, (shape, _dname(ref.dtype) if ref is not None else None)


def _r_reduce(x, axes, keepdims, dtype=None):
    return x, (_reduced(x, axes, keepdims), dtype or _dname(x.dtype))


def _r_minmax(x, axes, keepdims):
    return x, (_reduced(x, axes, keepdims), _dname(x.dtype))


def _r_anyall(x, axes, keepdims):
    return x, (_reduced(x, axes, keepdims), "bool")


def _r_arg(x, axis, keepdims):
    return x, (_reduced(x, axis, keepdims), "int64")


def _r_argsort(x, axis, descending=False, stable=False):
    return x, (tuple(x.shape), "int64")


def _r_reshape(x, shape):
    shape = _tup(shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        total = math.prod(x.shape)
        shape = tuple(total // known if s == -1 and known else s for s in shape)
    return x, (shape, _dname(x.dtype))


def _r_permute(x, axes):
    return x, (tuple(x.shape[a] for a in axes), _dname(x.dtype))


def _r_broadcast_to(x, shape):
    return x, (_tup(shape), _dname(x.dtype))


def _r_slice(x, key):
    shape, dims = [], list(x.shape)
    key = key if isinstance(key, tuple) else (key,)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    i = 0
    for k in key:
        if k is None:
            shape.append(1)
        elif k is Ellipsis:
            n = len(dims) - used
            shape.extend(dims[i:i + n])
            i += n
        elif isinstance(k, slice):
            shape.append(len(range(*k.indices(dims[i]))))
            i += 1
        else:
            i += 1                              # an int drops its axis
    shape.extend(dims[i:])
    return x, (tuple(shape), _dname(x.dtype))


def _r_diagonal(x, offset, a1, a2):
    n1, n2 = x.shape[a1], x.shape[a2]
    n = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    rest = tuple(s for i, s in enumerate(x.shape) if i not in (a1 % len(x.shape), a2 % len(x.shape)))
    return x, (rest + (n,), _dname(x.dtype))


def _r_concat(xs, axis):
    x = xs[0]
    shape = list(x.shape)
    shape[axis] = sum(int(e.shape[axis]) for e in xs)
    return x, (tuple(shape), _dname(x.dtype))


def _r_pad(x, widths, mode="constant", value=0):
    if len(widths) != len(x.shape):
        return x, (None, _dname(x.dtype))
    return x, (tuple(n + int(b) + int(a) for n, (b, a) in zip(x.shape, widths)), _dname(x.dtype))


def _r_index(x, key):
    return x, (None, _dname(x.dtype))           # advanced indexing: no cheap shape rule


def _r_gather(x, idx, axis):
    return x, (tuple(idx.shape), _dname(x.dtype))


def _r_nonzero(x):
    return x, [(None, "int64")] * len(x.shape)


def _r_matmul(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) == 1 and len(sb) == 1:
        shape = ()
    elif len(sb) == 1:
        shape = sa[:-1]
    elif len(sa) == 1:
        shape = sb[:-2] + sb[-1:]
    else:
        shape = broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    return a, (shape, _dname(a.dtype))


def _r_solve(a, b):
    sb = tuple(b.shape)
    shape = broadcast_shapes(tuple(a.shape[:-2]), sb[:-2]) + sb[-2:] if len(sb) >= 2 else sb
    return a, (shape, _dname(a.dtype))


def _r_clip(x, lo, hi):
    shape = tuple(x.shape)
    for v in (lo, hi):
        if _is_array(v):
            shape = broadcast_shapes(shape, tuple(v.shape))
    return x, (shape, _dname(x.dtype))


def _r_softmax(x, axis):
    return x, (tuple(x.shape), _dname(x.dtype))


def _r_conv(x, w, stride, padding, dilation, groups):
    out = tuple((s + p0 + p1 - d * (k - 1) - 1) // st + 1
                for s, (p0, p1), d, k, st in zip(x.shape[2:], padding, dilation, w.shape[2:], stride))
    return x, ((x.shape[0], w.shape[0]) + out, _dname(x.dtype))


def _r_conv_transpose(x, w, stride, padding, dilation, groups, out_size):
    return x, ((x.shape[0], w.shape[1] * groups) + _tup(out_size), _dname(x.dtype))


def _r_max_pool(x, kernel, stride, padding, dilation, out_size):
    shape = tuple(x.shape[:2]) + _tup(out_size)
    return x, [(shape, _dname(x.dtype)), (shape, "int64")]


def _r_avg_pool(x, kernel, stride, padding, out_size, *rest):
    return x, (tuple(x.shape[:2]) + _tup(out_size), _dname(x.dtype))


def _any(*args, **kwargs):
    """No cheap rule: the backend's array type (of the first array input) and a declared dtype."""
    ref = next((a for a in args if _is_array(a)), None)
    return ref, None


RULES = {
    "from_numpy": _r_from_numpy, "to_numpy": _r_to_numpy, "full": _r_full, "arange": _r_arange,
    "astype": _r_astype, "copy": _same,
    "uniform": _r_random, "normal": _r_random, "randint": _r_randint, "randperm": _r_randperm,
    "bernoulli": _r_sampler, "standard_gamma": _r_sampler, "poisson": _r_sampler, "binomial": _r_binomial,
    "where": _r_where,
    "sum": _r_reduce, "prod": _r_reduce, "max": _r_minmax, "min": _r_minmax, "any": _r_anyall,
    "all": _r_anyall, "argmax": _r_arg, "argmin": _r_arg, "cumsum": _same, "cumprod": _same,
    "argsort": _r_argsort,
    "reshape": _r_reshape, "permute": _r_permute, "broadcast_to": _r_broadcast_to, "slice": _r_slice,
    "diagonal": _r_diagonal, "flip": _same, "concat": _r_concat, "pad": _r_pad,
    "index": _r_index, "gather": _r_gather, "nonzero": _r_nonzero,
    "matmul": _r_matmul, "inv": _same, "solve": _r_solve,
    "clip": _r_clip, "softmax": _r_softmax, "log_softmax": _r_softmax,
    "conv": _r_conv, "conv_transpose": _r_conv_transpose, "max_pool": _r_max_pool, "avg_pool": _r_avg_pool,
}
