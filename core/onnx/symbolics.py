"""The op-to-ONNX table: `TABLE[op name](g, out, *args, **kwargs)` appends the nodes computing `out`
(the op's traced result) from the op's own arguments and returns the output's name (a tuple of names
for a tuple of tensors). One short function per op family; `g` is the graph (core/onnx/_graph.py),
`g.v(t)` the name of tensor t's value. Opset differences are handled where they exist (Split /
Squeeze / ReduceSum axes as inputs from 13, the other reductions from 18, Trilu from 14,
LayerNormalization from 17, Gelu from 20).

Shapes that come from traced sizes (SymInts, under dynamic axes) are computed in the graph; other
shapes are the constants seen while tracing.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from ..ops._core import wrap_dim
from ..tensor import Tensor
from ._graph import np_dtype, onnx_type
from ._symint import SymInt
from .errors import SymbolicValueError, UnsupportedOperatorError

TABLE: dict = {}
_BIG = 2 ** 62          # "to the end" in Slice


def register(*names):
    def deco(fn):
        for n in names:
            TABLE[n] = fn
        return fn
    return deco


def _reduce(g, op, x, axes, keepdims):
    """Reduce{op}: axes an input from opset 18 (ReduceSum: 13), an attribute before; None: all."""
    as_input = g.opset >= (13 if op == "ReduceSum" else 18)
    if axes is None:
        return g.op(op, x, keepdims=int(keepdims))
    if as_input:
        return g.op(op, x, g.ints(axes), keepdims=int(keepdims))
    return g.op(op, x, axes=list(axes), keepdims=int(keepdims))


def _dims(dim, nd):
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return sorted(wrap_dim(d, nd) for d in dim) if len(dim) else None
    return [wrap_dim(dim, nd)]


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def _promoted(*xs):
    return _dt.result_type(*[x for x in xs if not isinstance(x, SymInt)] or [0])


# -- pointwise ---------------------------------------------------------------------------------------------
def _binary(onnx_op, reflected=False, compare=False):
    def sym(g, out, a, b, *, alpha=1, out_=None, **_):
        if not isinstance(out, Tensor):
            return None
        if reflected:
            a, b = b, a
        dt = _promoted(a, b) if compare else out._dtype
        if onnx_op in ("Div",) and dt.category != 2 and not compare:
            dt = out._dtype
        x, y = g.cast(a, dt), g.cast(b, dt)
        if alpha != 1:
            y = g.op("Mul", y, g.scalar(alpha, dt))
        return g.op(onnx_op, x, y)
    return sym


for _names, _op in ((("add", "add_", "__add__", "__iadd__"), "Add"), (("sub", "sub_", "subtract", "__sub__", "__isub__"), "Sub"),
                    (("mul", "mul_", "multiply", "__mul__", "__imul__"), "Mul"),
                    (("div", "div_", "divide", "true_divide", "__truediv__", "__itruediv__"), "Div"),
                    (("pow", "pow_", "__pow__"), "Pow"), (("maximum",), "Max"), (("minimum",), "Min"),
                    (("logical_and", "__and__"), "And"), (("logical_or", "__or__"), "Or"),
                    (("logical_xor", "__xor__"), "Xor")):
    register(*_names)(_binary(_op))
for _names, _op in ((("__radd__",), "Add"), (("__rsub__",), "Sub"), (("__rmul__",), "Mul"),
                    (("__rtruediv__",), "Div"), (("__rpow__",), "Pow")):
    register(*_names)(_binary(_op, reflected=True))
for _names, _op in ((("eq", "__eq__"), "Equal"), (("lt", "less", "__lt__"), "Less"),
                    (("le", "less_equal", "__le__"), "LessOrEqual"), (("gt", "greater", "__gt__"), "Greater"),
                    (("ge", "greater_equal", "__ge__"), "GreaterOrEqual")):
    register(*_names)(_binary(_op, compare=True))


@register("ne", "not_equal", "__ne__")
def _ne(g, out, a, b):
    return g.op("Not", _binary("Equal", compare=True)(g, out, a, b)) if isinstance(out, Tensor) else None


_UNARY = {"neg": "Neg", "negative": "Neg", "__neg__": "Neg", "abs": "Abs", "absolute": "Abs", "__abs__": "Abs",
          "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan", "tanh": "Tanh",
          "sigmoid": "Sigmoid", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "round": "Round",
          "reciprocal": "Reciprocal", "relu": "Relu", "sign": "Sign", "logical_not": "Not", "isnan": "IsNaN",
          "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "arcsin": "Asin",
          "arccos": "Acos", "arctan": "Atan", "bitwise_not": "BitwiseNot", "relu_": "Relu", "sigmoid_": "Sigmoid",
          "tanh_": "Tanh", "exp_": "Exp", "neg_": "Neg", "sqrt_": "Sqrt", "abs_": "Abs"}


def _unary(onnx_op):
    def sym(g, out, x, *args, **kwargs):
        if out._dtype is not x._dtype and onnx_op not in ("Not", "IsNaN"):
            return g.op(onnx_op, g.cast(x, out._dtype))
        return g.op(onnx_op, g.v(x))
    return sym


for _n, _op in _UNARY.items():
    register(_n)(_unary(_op))


@register("__invert__")
def _invert(g, out, x):
    return g.op("Not" if x._dtype is _dt.bool_ else "BitwiseNot", g.v(x))


@register("rsqrt")
def _rsqrt(g, out, x):
    return g.op("Reciprocal", g.op("Sqrt", g.cast(x, out._dtype)))


@register("square")
def _square(g, out, x):
    v = g.v(x)
    return g.op("Mul", v, v)


@register("log1p")
def _log1p(g, out, x):
    return g.op("Log", g.op("Add", g.cast(x, out._dtype), g.scalar(1, out._dtype)))


@register("expm1")
def _expm1(g, out, x):
    return g.op("Sub", g.op("Exp", g.cast(x, out._dtype)), g.scalar(1, out._dtype))


@register("__pos__", "contiguous", "clone", "detach", "cpu", "cuda", "resolve_conj", "resolve_neg")
def _identity(g, out, x, *args, **kwargs):
    return g.op("Identity", g.v(x))


@register("to", "type_as", "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char")
def _to(g, out, x, *args, **kwargs):
    if not isinstance(out, Tensor):
        return None
    return g.cast(x, out._dtype) if out._dtype is not x._dtype else g.op("Identity", g.v(x))


@register("clamp", "clip", "clamp_")
def _clamp(g, out, x, min=None, max=None, **_):
    dt = out._dtype
    lo = None if min is None else g.cast(min, dt)
    hi = None if max is None else g.cast(max, dt)
    return g.op("Clip", g.cast(x, dt), lo, hi)


@register("clamp_min")
def _clamp_min(g, out, x, m):
    return _clamp(g, out, x, min=m)


@register("clamp_max")
def _clamp_max(g, out, x, m):
    return _clamp(g, out, x, max=m)


@register("where")
def _where(g, out, cond, a=None, b=None):
    if a is None:
        raise UnsupportedOperatorError("where", g.opset, "where(condition) has a data-dependent shape")
    return g.op("Where", g.cast(cond, _dt.bool_), g.cast(a, out._dtype), g.cast(b, out._dtype))


@register("masked_fill", "masked_fill_")
def _masked_fill(g, out, x, mask, value):
    return g.op("Where", g.cast(mask, _dt.bool_), g.cast(value, out._dtype), g.v(x))


# -- activations ---------------------------------------------------------------------------------------------
@register("relu6")
def _relu6(g, out, x, inplace=False):
    return g.op("Clip", g.v(x), g.scalar(0, x._dtype), g.scalar(6, x._dtype))


@register("hardtanh", "hardtanh_")
def _hardtanh(g, out, x, min_val=-1.0, max_val=1.0, inplace=False):
    return g.op("Clip", g.v(x), g.scalar(min_val, x._dtype), g.scalar(max_val, x._dtype))


@register("leaky_relu", "leaky_relu_")
def _leaky_relu(g, out, x, negative_slope=0.01, inplace=False):
    return g.op("LeakyRelu", g.v(x), alpha=float(negative_slope))


@register("elu", "elu_")
def _elu(g, out, x, alpha=1.0, inplace=False):
    return g.op("Elu", g.v(x), alpha=float(alpha))


@register("selu")
def _selu(g, out, x, inplace=False):
    return g.op("Selu", g.v(x))


@register("gelu")
def _gelu(g, out, x, approximate="none"):
    if g.opset >= 20:
        return g.op("Gelu", g.v(x), approximate=approximate)
    dt, v = x._dtype, g.v(x)
    half = g.op("Mul", v, g.scalar(0.5, dt))
    if approximate == "tanh":
        inner = g.op("Mul", g.op("Add", v, g.op("Mul", g.op("Mul", g.op("Mul", v, v), v), g.scalar(0.044715, dt))),
                     g.scalar(math.sqrt(2 / math.pi), dt))
        return g.op("Mul", half, g.op("Add", g.op("Tanh", inner), g.scalar(1, dt)))
    return g.op("Mul", half, g.op("Add", g.op("Erf", g.op("Mul", v, g.scalar(1 / math.sqrt(2), dt))),
                                  g.scalar(1, dt)))


@register("silu")
def _silu(g, out, x, inplace=False):
    v = g.v(x)
    return g.op("Mul", v, g.op("Sigmoid", v))


@register("softplus")
def _softplus(g, out, x, beta=1.0, threshold=20.0):
    if beta == 1:
        return g.op("Softplus", g.v(x))
    b = g.scalar(beta, x._dtype)
    return g.op("Div", g.op("Softplus", g.op("Mul", g.v(x), b)), b)


def _softmax_dim(dim, nd):
    return (0 if nd in (0, 1, 3) else 1) if dim is None else wrap_dim(dim, nd)


def _softmax_like(onnx_op):
    def sym(g, out, x, dim=None, *rest, **_):         # a dtype argument shows in out's dtype
        v = g.cast(x, out._dtype) if out._dtype is not x._dtype else g.v(x)
        return g.op(onnx_op, v, axis=_softmax_dim(dim, x.ndim))
    return sym


register("softmax")(_softmax_like("Softmax"))
register("log_softmax")(_softmax_like("LogSoftmax"))


# -- linear algebra ------------------------------------------------------------------------------------------
@register("matmul", "mm", "bmm", "__matmul__")
def _matmul(g, out, a, b, **_):
    return g.op("MatMul", g.v(a), g.v(b))


@register("__rmatmul__")
def _rmatmul(g, out, a, b):
    return g.op("MatMul", g.v(b), g.v(a))


@register("linear")
def _linear(g, out, x, weight, bias=None):
    if x.ndim == 2:
        return g.op("Gemm", g.v(x), g.v(weight), None if bias is None else g.v(bias), transB=1)
    y = g.op("MatMul", g.v(x), g.op("Transpose", g.v(weight), perm=[1, 0]) if weight.ndim == 2 else g.v(weight))
    return y if bias is None else g.op("Add", y, g.v(bias))


@register("addmm")
def _addmm(g, out, c, a, b, *, beta=1, alpha=1, **_):
    return g.op("Gemm", g.v(a), g.v(b), g.v(c), alpha=float(alpha), beta=float(beta))


@register("t")
def _t(g, out, x):
    return g.op("Transpose", g.v(x), perm=[1, 0]) if x.ndim == 2 else g.op("Identity", g.v(x))


@register("T")
def _T(g, out, x):
    return g.op("Transpose", g.v(x), perm=list(range(x.ndim))[::-1])


@register("mT")
def _mT(g, out, x):
    p = list(range(x.ndim))
    p[-1], p[-2] = p[-2], p[-1]
    return g.op("Transpose", g.v(x), perm=p)


# -- shapes ----------------------------------------------------------------------------------------------------
@register("view", "reshape")
def _reshape(g, out, x, *shape):
    return g.op("Reshape", g.v(x), g.ints(_shape_args(shape)))


@register("view_as", "reshape_as")
def _reshape_as(g, out, x, other):
    return g.op("Reshape", g.v(x), g.shape(other))


@register("flatten")
def _flatten(g, out, x, start_dim=0, end_dim=-1):
    nd = x.ndim
    if nd == 0:
        return g.op("Reshape", g.v(x), g.ints([1]))
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if s == 1 and e == nd - 1:
        return g.op("Flatten", g.v(x), axis=1)
    if s == e:
        return g.op("Identity", g.v(x))
    parts = [p for p in (g.shape(x, 0, s) if s else None, g.ints([-1]),
                         g.shape(x, e + 1, nd) if e + 1 < nd else None) if p is not None]
    return g.op("Reshape", g.v(x), parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis=0))


@register("unflatten")
def _unflatten(g, out, x, dim, sizes):
    nd = x.ndim
    d = wrap_dim(dim, nd)
    parts = [p for p in (g.shape(x, 0, d) if d else None, g.ints(sizes),
                         g.shape(x, d + 1, nd) if d + 1 < nd else None) if p is not None]
    return g.op("Reshape", g.v(x), parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis=0))


@register("transpose", "swapaxes", "swapdims")
def _transpose(g, out, x, d0, d1):
    nd = x.ndim
    p = list(range(nd))
    a, b = wrap_dim(d0, nd), wrap_dim(d1, nd)
    p[a], p[b] = p[b], p[a]
    return g.op("Transpose", g.v(x), perm=p)


@register("permute")
def _permute(g, out, x, *dims):
    return g.op("Transpose", g.v(x), perm=[wrap_dim(d, x.ndim) for d in _shape_args(dims)])


@register("unsqueeze", "unsqueeze_")
def _unsqueeze(g, out, x, dim):
    return g.op("Unsqueeze", g.v(x), g.ints([wrap_dim(dim, x.ndim + 1)]))


def _squeeze_axes(g, v, axes):
    return g.op("Squeeze", v, g.ints(axes)) if axes else g.op("Identity", v)


@register("squeeze", "squeeze_")
def _squeeze(g, out, x, dim=None):
    shape = tuple(x._data.shape)
    dims = range(x.ndim) if dim is None else _dims(dim, x.ndim)
    return _squeeze_axes(g, g.v(x), [d for d in dims if shape[d] == 1])


@register("expand", "broadcast_to")
def _expand(g, out, x, *sizes):
    sizes = _shape_args(sizes)
    return g.op("Expand", g.v(x), g.ints([1 if (not isinstance(s, SymInt) and s == -1) else s for s in sizes]))


@register("expand_as")
def _expand_as(g, out, x, other):
    return g.op("Expand", g.v(x), g.shape(other))


@register("repeat", "tile")
def _repeat(g, out, x, *sizes):
    sizes = [int(s) for s in _shape_args(sizes)]
    v = g.v(x)
    if len(sizes) > x.ndim:
        v = g.op("Reshape", v, g.ints([1] * (len(sizes) - x.ndim) + list(x._data.shape)))
    elif len(sizes) < x.ndim:       # tile: missing leading repeats are 1
        sizes = [1] * (x.ndim - len(sizes)) + sizes
    return g.op("Tile", v, g.ints(sizes))


@register("cat", "concat", "concatenate")
def _cat(g, out, tensors, dim=0, **_):
    items = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]
    return g.op("Concat", *[g.cast(t, out._dtype) for t in items], axis=wrap_dim(dim, out.ndim))


@register("stack")
def _stack(g, out, tensors, dim=0, **_):
    d = wrap_dim(dim, out.ndim)
    return g.op("Concat", *[g.op("Unsqueeze", g.cast(t, out._dtype), g.ints([d])) for t in tensors], axis=d)


def _split_outputs(g, out, x, dim):
    d = wrap_dim(dim, x.ndim)
    sizes = [o._data.shape[d] for o in out]
    if len(out) == 1:
        return (g.op("Identity", g.v(x)),)
    names = g.op("Split", g.v(x), g.ints(sizes), axis=d, outputs=len(out))
    return tuple(names)


@register("split", "chunk", "split_with_sizes", "tensor_split")
def _split(g, out, x, sizes_or_n, dim=0):
    return _split_outputs(g, out, x, dim)


@register("unbind", "__iter__")
def _unbind(g, out, x, dim=0):
    out = tuple(out)
    parts = _split_outputs(g, out, x, dim)
    d = wrap_dim(dim, x.ndim)
    return tuple(g.op("Squeeze", p, g.ints([d])) for p in parts)


def _slice(g, v, starts, ends, axes, steps=None):
    if not axes:
        return v
    return g.op("Slice", v, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps or [1] * len(axes)))


@register("narrow")
def _narrow(g, out, x, dim, start, length):
    d = wrap_dim(dim, x.ndim)
    if isinstance(start, Tensor):
        start = int(start.item())
    return _slice(g, g.v(x), [start], [start + length], [d])


@register("select")
def _select(g, out, x, dim, index):
    return g.op("Gather", g.v(x), g.scalar(int(index), _dt.int64), axis=wrap_dim(dim, x.ndim))


@register("getitem", "__getitem__")
def _getitem(g, out, x, key):
    """Basic indexing (ints, slices, None, ...) and one integer-tensor index."""
    key = key if isinstance(key, tuple) else (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    items = []
    for k in key:
        if k is Ellipsis:
            items.extend([slice(None)] * (x.ndim - n_real))
        else:
            items.append(k)
    if Ellipsis not in key:
        items.extend([slice(None)] * (x.ndim - n_real))
    v = g.v(x)
    starts, ends, axes, steps, squeeze, unsq = [], [], [], [], [], []
    tensor_at, d, p = None, 0, 0
    for k in items:
        if k is None:
            unsq.append(p)
            p += 1
            continue
        if isinstance(k, Tensor) and k.ndim == 0 and k._dtype.category != 2 and k._dtype is not _dt.bool_:
            k = int(k.item())
        if isinstance(k, slice):
            if k.step is not None and int(k.step) <= 0:
                raise SymbolicValueError("step must be greater than zero")
            if not (k.start is None and k.stop is None and k.step in (None, 1)):
                starts.append(0 if k.start is None else k.start)
                ends.append(_BIG if k.stop is None else k.stop)
                axes.append(d)
                steps.append(1 if k.step is None else k.step)
            p += 1
        elif isinstance(k, int):
            starts.append(k)
            ends.append(_BIG if k == -1 else k + 1)
            axes.append(d)
            steps.append(1)
            squeeze.append(d)
        elif isinstance(k, Tensor) and tensor_at is None and k._dtype.category == 1 and k._dtype is not _dt.bool_:
            tensor_at = (d, k, p)
            p += k.ndim
        else:
            raise UnsupportedOperatorError("index", g.opset, "only basic indexing and one integer tensor index "
                                           "are supported")
        d += 1
    if tensor_at is not None and squeeze:
        raise UnsupportedOperatorError("index", g.opset, "an integer tensor index combined with integer indices")
    v = _slice(g, v, starts, ends, axes, steps)
    if tensor_at is not None:
        td, idx, _ = tensor_at
        v = g.op("Gather", v, g.cast(idx, _dt.int64), axis=td)
    v = _squeeze_axes(g, v, squeeze) if squeeze else v
    if unsq:
        v = g.op("Unsqueeze", v, g.ints(unsq))
    return v if (squeeze or unsq or axes or tensor_at) else g.op("Identity", v)


def _tri_sym(upper):
    def sym(g, out, x, diagonal=0):
        if g.opset >= 14:
            return g.op("Trilu", g.v(x), g.ints([diagonal]) if diagonal else None, upper=upper)
        r, c = x._data.shape[-2:]
        keep = np.triu(np.ones((r, c), bool), diagonal) if upper else np.tril(np.ones((r, c), bool), diagonal)
        return g.op("Where", g.const(keep), g.v(x), g.scalar(0, x._dtype))
    return sym


register("tril", "tril_")(_tri_sym(0))
register("triu", "triu_")(_tri_sym(1))


# -- creation from traced sizes (recorded only when a size is a SymInt) ------------------------------------
def _full_sym(fill):
    def sym(g, out, *size, fill_value=None, **_):
        if fill == "arg":
            size, fill_value = size[0], size[1] if len(size) > 1 else fill_value
        else:
            size, fill_value = _shape_args(size), fill
        return _constant_of_shape(g, g.ints(size), fill_value, out._dtype)
    return sym


def _constant_of_shape(g, shape, value, dtype):
    return g.op("ConstantOfShape", shape, value=np.array([value], dtype=np_dtype(dtype)))


register("zeros")(_full_sym(0))
register("ones")(_full_sym(1))
register("full")(_full_sym("arg"))


def _like_sym(fill):
    def sym(g, out, x, *args, **kwargs):
        value = args[0] if fill == "arg" else fill
        return _constant_of_shape(g, g.shape(x), value, out._dtype)
    return sym


register("zeros_like")(_like_sym(0))
register("ones_like")(_like_sym(1))
register("full_like")(_like_sym("arg"))


def _new_sym(fill):
    def sym(g, out, x, *size, **kwargs):
        if fill == "arg":
            size, value = size[0], size[1] if len(size) > 1 else kwargs.get("fill_value")
        else:
            size, value = _shape_args(size), fill
        if not any(isinstance(s, SymInt) for s in size):
            return g.op("Identity", g.const(_np_of(out)))    # depends on x's dtype only
        return _constant_of_shape(g, g.ints(size), value, out._dtype)
    return sym


register("new_zeros", "new_empty")(_new_sym(0))
register("new_ones")(_new_sym(1))
register("new_full")(_new_sym("arg"))


@register("arange")
def _arange(g, out, start, end=None, step=1, **_):
    if end is None:
        start, end = 0, start
    dt = out._dtype
    r = g.op("Range", g.cast(start, _dt.int64 if dt.category != 2 else dt),
             g.cast(end, _dt.int64 if dt.category != 2 else dt), g.cast(step, _dt.int64 if dt.category != 2 else dt))
    return r if dt.category == 2 or dt is _dt.int64 else g.op("Cast", r, to=onnx_type(dt))


def _np_of(t):
    return np.array(t._host(), copy=True)


# -- reductions ---------------------------------------------------------------------------------------------
def _reduction(op):
    def sym(g, out, x, dim=None, keepdim=False, *, dtype=None, **_):
        if not isinstance(keepdim, bool):
            keepdim = False
        v = g.cast(x, out._dtype) if out._dtype is not x._dtype else g.v(x)
        return _reduce(g, op, v, _dims(dim, x.ndim), keepdim)
    return sym


register("sum")(_reduction("ReduceSum"))
register("mean")(_reduction("ReduceMean"))
register("prod")(_reduction("ReduceProd"))
register("amax")(_reduction("ReduceMax"))
register("amin")(_reduction("ReduceMin"))


def _all_any(op):
    def sym(g, out, x, dim=None, keepdim=False):
        v = g.op("Cast", g.v(x), to=onnx_type(_dt.int32))
        if x._dtype is not _dt.bool_:
            v = g.op("Cast", g.op("Cast", g.v(x), to=onnx_type(_dt.bool_)), to=onnx_type(_dt.int32))
        return g.op("Cast", _reduce(g, op, v, _dims(dim, x.ndim), keepdim), to=onnx_type(_dt.bool_))
    return sym


register("all")(_all_any("ReduceMin"))
register("any")(_all_any("ReduceMax"))


def _max_min(reduce_op, arg_op, binary):
    def sym(g, out, x, dim=None, keepdim=False, *, other=None, **_):
        if isinstance(dim, Tensor):
            return g.op(binary, g.cast(x, out._dtype), g.cast(dim, out._dtype))
        if dim is None:
            return _reduce(g, reduce_op, g.v(x), None, False)
        d = wrap_dim(dim, x.ndim)
        keep = bool(keepdim) if isinstance(keepdim, bool) else False
        vals = _reduce(g, reduce_op, g.v(x), [d], keep)
        return vals, g.op(arg_op, g.v(x), axis=d, keepdims=int(keep))
    return sym


register("max")(_max_min("ReduceMax", "ArgMax", "Max"))
register("min")(_max_min("ReduceMin", "ArgMin", "Min"))


def _arg(op):
    def sym(g, out, x, dim=None, keepdim=False):
        if dim is None:
            return g.op(op, g.op("Reshape", g.v(x), g.ints([-1])), axis=0, keepdims=0)
        return g.op(op, g.v(x), axis=wrap_dim(dim, x.ndim), keepdims=int(keepdim))
    return sym


register("argmax")(_arg("ArgMax"))
register("argmin")(_arg("ArgMin"))


def _var_std(std):
    def sym(g, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None, **_):
        if isinstance(unbiased, (int, bool)) is False and unbiased is not None:   # var(x, dim) forms
            dim, unbiased = unbiased, None
        corr = correction if correction is not None else (0 if unbiased is False else 1)
        keepdim = keepdim if isinstance(keepdim, bool) else False
        axes = _dims(dim, x.ndim)
        v = g.v(x)
        mean = _reduce(g, "ReduceMean", v, axes, True)
        d = g.op("Sub", v, mean)
        ss = _reduce(g, "ReduceSum", g.op("Mul", d, d), axes, keepdim)
        n = int(np.prod([x._data.shape[a] for a in (axes if axes is not None else range(x.ndim))]))
        r = g.op("Div", ss, g.scalar(max(n - corr, 0), x._dtype))
        return g.op("Sqrt", r) if std else r
    return sym


register("var")(_var_std(False))
register("std")(_var_std(True))


# -- layers ------------------------------------------------------------------------------------------------
def _tuple(v, n):
    return [int(a) for a in v] if isinstance(v, (tuple, list)) else [int(v)] * n


@register("conv1d", "conv2d", "conv3d")
def _conv(g, out, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    n = weight.ndim - 2
    k = list(weight._data.shape[2:])
    dil = _tuple(dilation, n)
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0] * (2 * n)
        else:
            tot = [d * (kk - 1) for d, kk in zip(dil, k)]
            pads = [t // 2 for t in tot] + [t - t // 2 for t in tot]
    else:
        p = _tuple(padding, n)
        pads = p + p
    v = g.v(x)
    unbatched = x.ndim == n + 1
    if unbatched:
        v = g.op("Unsqueeze", v, g.ints([0]))
    y = g.op("Conv", v, g.v(weight), None if bias is None else g.v(bias), kernel_shape=k,
             strides=_tuple(stride, n), pads=pads, dilations=dil, group=int(groups))
    return g.op("Squeeze", y, g.ints([0])) if unbatched else y


@register("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_t(g, out, x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    n = weight.ndim - 2
    p = _tuple(padding, n)
    return g.op("ConvTranspose", g.v(x), g.v(weight), None if bias is None else g.v(bias),
                kernel_shape=list(weight._data.shape[2:]), strides=_tuple(stride, n), pads=p + p,
                dilations=_tuple(dilation, n), group=int(groups), output_padding=_tuple(output_padding, n))


def _pool_common(x, kernel_size, stride, padding, n):
    k = _tuple(kernel_size, n)
    s = k if (stride is None or (isinstance(stride, (tuple, list)) and not stride)) else _tuple(stride, n)
    p = _tuple(padding, n)
    return k, s, p + p


def _batched(g, x, n, make):
    v = g.v(x)
    if x.ndim == n + 1:
        return g.op("Squeeze", make(g.op("Unsqueeze", v, g.ints([0]))), g.ints([0]))
    return make(v)


def _max_pool(n):
    def sym(g, out, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        if return_indices:
            raise UnsupportedOperatorError(f"max_pool{n}d_with_indices", g.opset)
        k, s, p = _pool_common(x, kernel_size, stride, padding, n)
        return _batched(g, x, n, lambda v: g.op("MaxPool", v, kernel_shape=k, strides=s, pads=p,
                                               dilations=_tuple(dilation, n), ceil_mode=int(ceil_mode)))
    return sym


def _avg_pool(n):
    def sym(g, out, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
            divisor_override=None):
        if divisor_override:
            raise UnsupportedOperatorError(f"avg_pool{n}d", g.opset, "divisor_override")
        k, s, p = _pool_common(x, kernel_size, stride, padding, n)
        return _batched(g, x, n, lambda v: g.op("AveragePool", v, kernel_shape=k, strides=s, pads=p,
                                               ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad)))
    return sym


def _adaptive(n, kind):
    def sym(g, out, x, output_size, return_indices=False):
        if return_indices:
            raise UnsupportedOperatorError(f"adaptive_max_pool{n}d", g.opset, "return_indices")
        ins = list(x._data.shape[-n:])
        outs = list(out._data.shape[-n:])
        if all(o == 1 for o in outs):
            return _batched(g, x, n, lambda v: g.op("Global" + kind + "Pool", v))
        if any(i % o for i, o in zip(ins, outs)):
            raise UnsupportedOperatorError(f"adaptive_{kind.lower()}_pool{n}d", g.opset,
                                           "input size not divisible by output size")
        k = [i // o for i, o in zip(ins, outs)]
        return _batched(g, x, n, lambda v: g.op(kind + "Pool", v, kernel_shape=k, strides=k))
    return sym


for _n in (1, 2, 3):
    register(f"max_pool{_n}d")(_max_pool(_n))
    register(f"avg_pool{_n}d")(_avg_pool(_n))
    register(f"adaptive_avg_pool{_n}d")(_adaptive(_n, "Average"))
    register(f"adaptive_max_pool{_n}d")(_adaptive(_n, "Max"))


@register("batch_norm")
def _batch_norm(g, out, x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                eps=1e-5):
    if training or running_mean is None:
        raise UnsupportedOperatorError("batch_norm", g.opset, "batch statistics (training mode); export in eval")
    c = x._data.shape[1]
    w = g.v(weight) if weight is not None else g.const(np.ones(c, np_dtype(x._dtype)))
    b = g.v(bias) if bias is not None else g.const(np.zeros(c, np_dtype(x._dtype)))
    return g.op("BatchNormalization", g.v(x), w, b, g.v(running_mean), g.v(running_var), epsilon=float(eps))


@register("layer_norm")
def _layer_norm(g, out, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    k = len(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else 1
    dt, ns = x._dtype, tuple(x._data.shape[-k:])
    w = g.v(weight) if weight is not None else g.const(np.ones(ns, np_dtype(dt)))
    b = g.v(bias) if bias is not None else g.const(np.zeros(ns, np_dtype(dt)))
    if g.opset >= 17:
        return g.op("LayerNormalization", g.v(x), w, b, axis=-k, epsilon=float(eps))
    axes = list(range(x.ndim - k, x.ndim))
    v = g.v(x)
    d = g.op("Sub", v, _reduce(g, "ReduceMean", v, axes, True))
    var = _reduce(g, "ReduceMean", g.op("Mul", d, d), axes, True)
    y = g.op("Div", d, g.op("Sqrt", g.op("Add", var, g.scalar(eps, dt))))
    return g.op("Add", g.op("Mul", y, w), b)


@register("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
def _dropout(g, out, x, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return g.op("Identity", g.v(x))
    raise UnsupportedOperatorError("dropout", g.opset, "dropout in training mode (export in eval mode)")


@register("embedding")
def _embedding(g, out, x, weight, padding_idx=None, max_norm=None, *args, **kwargs):
    if max_norm is not None:
        raise UnsupportedOperatorError("embedding", g.opset, "max_norm (it renormalizes the weight in place)")
    return g.op("Gather", g.v(weight), g.cast(x, _dt.int64), axis=0)


@register("pad")
def _pad(g, out, x, pad, mode="constant", value=None):
    nd = x.ndim
    pad = [int(p) for p in pad]
    begins, ends = [0] * nd, [0] * nd
    for i in range(len(pad) // 2):
        begins[nd - 1 - i], ends[nd - 1 - i] = pad[2 * i], pad[2 * i + 1]
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
    if onnx_mode is None or (onnx_mode == "wrap" and g.opset < 19):
        raise UnsupportedOperatorError("pad", g.opset, f"mode {mode!r}")
    cval = g.scalar(0 if value is None else value, x._dtype) if mode == "constant" else None
    return g.op("Pad", g.v(x), g.ints(begins + ends), cval, mode=onnx_mode)


@register("one_hot")
def _one_hot(g, out, x, num_classes=-1):
    n = out._data.shape[-1]
    values = g.const(np.array([0, 1], dtype=np.int64))
    return g.op("OneHot", g.cast(x, _dt.int64), g.ints([n]), values, axis=-1)
