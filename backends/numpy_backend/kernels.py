"""NumPy kernels for device "cpu": the reference backend.

NumPy returns host scalars for 0-d results; every kernel here returns an ndarray.
"""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
from numpy import ndarray

from tensorplug.dispatch.backend_api import BINARY, UNARY

from . import select_loops

# NumPy warns about IEEE results (log(0), inf - inf, float16 overflow); PyTorch's kernels are silent.
# The filter matches only warnings raised from this package's code, so the user's own NumPy calls
# still warn, and it costs nothing until a warning is raised (np.errstate per call costs ~0.6 us).
# pytest resets filters per test: tensorplug's pytest plugin adds the same filter to its configuration.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tensorplug\.backends\.numpy_backend(\.|$)")


def _arr(r):
    return r if r.__class__ is ndarray else np.asarray(r)


def _pointwise(ufunc):
    # 0-d inputs make NumPy return a scalar; kernels must return arrays
    if ufunc.nin == 1:
        def kernel(x, out=None):
            r = ufunc(x) if out is None else ufunc(x, out=out)
            return r if r.__class__ is ndarray else np.asarray(r)
    else:
        def kernel(x, y, out=None):
            r = ufunc(x, y) if out is None else ufunc(x, y, out=out)
            return r if r.__class__ is ndarray else np.asarray(r)
    kernel.__name__ = ufunc.__name__
    return kernel


_UFUNCS = {
    "neg": np.negative, "abs": np.absolute, "sign": np.sign, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "floor": np.floor,
    "ceil": np.ceil, "round": np.rint, "trunc": np.trunc, "logical_not": np.logical_not,
    "bitwise_not": np.invert, "isnan": np.isnan,
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2, "eq": np.equal,
    "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
    "sigmoid": None, "log1p": np.log1p, "expm1": np.expm1, "sinh": np.sinh, "cosh": np.cosh,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "isinf": np.isinf, "isfinite": np.isfinite,
}


# x ** e for the scalar exponents PyTorch's CPU kernel also computes without pow() (its
# pow_tensor_scalar fast paths): np.power calls libm pow per element for every exponent but 2, 0.5
# and -1, measured 6.1 ms for x ** 3.0 on 131,072 float32 against 27 us for x * x * x.
_POWER_BY_PRODUCTS = {
    2: lambda x: x * x,
    3: lambda x: x * x * x,
    0.5: np.sqrt,
    -0.5: lambda x: 1 / np.sqrt(x),
    -1: lambda x: 1 / x,
    -2: lambda x: 1 / (x * x),
}


def _pow(x, y, out=None):
    if y.__class__ in (int, float) and x.__class__ is ndarray and x.dtype.char in "fd":
        f = _POWER_BY_PRODUCTS.get(y)
        if f is not None:
            r = f(x)                     # a new array: x may be out (an in-place pow_)
            if out is None:
                return _arr(r)
            np.copyto(out, r)
            return out
    r = np.power(x, y) if out is None else np.power(x, y, out=out)
    return _arr(r)


_erf_ufunc = np.frompyfunc(__import__("math").erf, 1, 1)


_scipy_erf = []      # [scipy.special.erf or None], looked up on the first erf (SciPy is optional)


def _erf(x, out=None):
    # NumPy has no erf: SciPy's ufunc where installed (1M float32 in 16 ms), else math.erf per element
    # (exact to the last ulp, ~0.1 us each)
    if not _scipy_erf:
        try:
            from scipy.special import erf
        except ImportError:
            erf = None
        _scipy_erf.append(erf)
    erf = _scipy_erf[0]
    if erf is not None and isinstance(x, ndarray) and x.dtype.kind == "f":
        r = erf(x).astype(x.dtype, copy=False)
    else:
        r = np.asarray(_erf_ufunc(x), dtype=object).astype(x.dtype) if isinstance(x, ndarray) \
            else np.asarray(_erf_ufunc(x))
    if out is not None:
        out[...] = r
        return out
    return _arr(r)


_rint = _pointwise(np.rint)
_sign_kernel = _pointwise(np.sign)


def _unchanged(x, out):
    """x as its own result: a copy, or written into out."""
    if out is None:
        return x.copy()
    np.copyto(out, x)
    return out


def _round(x, out=None):
    if x.dtype.kind in "iub":       # integers are already round; np.rint would return floats
        return _unchanged(x, out)
    return _rint(x, out=out)


def _sign(x, out=None):
    if x.dtype.kind == "b":         # sign of a bool is itself
        return _unchanged(x, out)
    r = _sign_kernel(x, out=out)
    if r.dtype.kind == "f":         # PyTorch's sign(NaN) is 0 (NumPy's is NaN)
        np.copyto(r, 0, where=r != r)
    return r


def _sigmoid(x, out=None):
    # 1 / (1 + exp(-x)), as PyTorch's CPU kernel: exp(-x) = inf below -88 (float32) gives 0 exactly
    # (sigmoid is below 2^-126 there). Branch-free: 1M float32 in 1.2 ms; the former
    # np.where-on-the-sign formula took 6.6 ms.
    with np.errstate(over="ignore"):
        e = np.asarray(np.exp(np.negative(x)))      # 0-d inputs give NumPy scalars
    if e.dtype.kind not in "fc":        # bool / integer inputs: NumPy's exp gave float16 or float64
        e = e.astype(x.dtype if x.dtype.kind in "fc" else np.float64)
    e += 1
    r = np.reciprocal(e, out=e) if out is None else np.divide(1, e, out=out)
    return _arr(r)


def _where(c, x, y):
    loops = select_loops.kernels()
    if loops is not None and (r := loops["where"](c, x, y)) is not None:
        return r
    return _arr(np.where(c, x, y))


# Reductions call the ufunc methods, not np.sum & co: those wrappers are slower, and the warnings they
# raise come from NumPy's own module, past the filter above.
def _reduce(ufunc):
    # NumPy widens small integers by default; the SPI keeps x's dtype unless told otherwise
    def kernel(x, axes, keepdims, dtype=None):
        return _arr(ufunc.reduce(x, axis=axes, keepdims=keepdims, dtype=dtype or x.dtype))
    return kernel


_GEMV_SUM_MIN = 4096


def _sum(x, axes, keepdims, dtype=None):
    """np.add.reduce, except a float sum over axis 0 (with any leading axes after it) and optionally all
    trailing axes, of a C-contiguous array: a bias gradient (the rows of a (M, N) gradient) or
    batch_norm's per-channel sums over (0, 2, 3). As GEMVs, ones(M) @ x, then (C, rest) @ ones(rest):
    NumPy's reduction over axes that are not the innermost runs a short loop per element.
    700x10000 over (0,): 1.96 -> 0.55 ms; (8, 512, 2, 2) over (0, 2, 3): 71 -> 9 us, (8, 64, 32, 32)
    111 -> 51 us. The leading rows are added one after another, as NumPy adds them."""
    nd = x.ndim
    if (type(axes) is tuple and axes and axes[0] == 0 and x.dtype.kind == "f" and x.dtype.itemsize >= 4
            and (dtype is None or dtype == x.dtype) and x.size >= _GEMV_SUM_MIN and x.flags.c_contiguous):
        a = 1                                   # axes = (0, ..., a-1) + (b, ..., nd-1), a < b
        while a < len(axes) and axes[a] == a:
            a += 1
        b = nd - (len(axes) - a)
        if a < b and axes[a:] == tuple(range(b, nd)):
            shape = x.shape
            lead = math.prod(shape[:a])
            r = np.ones(lead, x.dtype) @ x.reshape(lead, -1) if lead > 1 else x.reshape(-1)
            if b < nd:
                r = r.reshape(-1, math.prod(shape[b:])) @ np.ones(math.prod(shape[b:]), x.dtype)
            elif lead == 1:
                r = r.copy()                    # a new array, never a view of x
            kept = shape[a:b]
            if keepdims:
                return r.reshape((1,) * a + kept + (1,) * (nd - b))
            return r.reshape(kept)
    return _arr(np.add.reduce(x, axis=axes, keepdims=keepdims, dtype=dtype or x.dtype))


def _minmax(ufunc):
    def kernel(x, axes, keepdims):
        return _arr(ufunc.reduce(x, axis=axes, keepdims=keepdims))
    return kernel


def _scan(ufunc):
    def kernel(x, axis):
        return x.copy() if x.ndim == 0 else ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    return kernel


def _arg(fn):
    def kernel(x, axis, keepdims):
        return _arr(fn(x, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)
    return kernel


def argsort(x, axis, descending, stable):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable" if stable else None).astype(np.int64, copy=False)
    # descending with NaN first (PyTorch treats NaN as the largest value) and stable ties
    if x.dtype == np.bool_:
        key = ~x
    elif x.dtype.kind == "u":
        key = np.iinfo(x.dtype).max - x
    elif x.dtype.kind == "i":
        key = -(x.astype(np.int64) + 1)      # -(v+1) is monotone decreasing without overflow
    else:
        key = np.where(np.isnan(x), -np.inf, -x)
        nan_first = np.isnan(x)
        # NaN must sort before everything; -inf ties with -(+inf): separate via a two-key sort
        order = np.argsort(key, axis=axis, kind="stable")
        nan_sorted = np.take_along_axis(nan_first, order, axis=axis)
        reorder = np.argsort(~nan_sorted, axis=axis, kind="stable")
        return np.take_along_axis(order, reorder, axis=axis).astype(np.int64, copy=False)
    return np.argsort(key, axis=axis, kind="stable").astype(np.int64, copy=False)


def pad(x, widths, mode, value=0):
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
    if np_mode is None:
        raise ValueError(f"unknown padding mode {mode!r}")
    return np.pad(x, widths, mode=np_mode)


def astype(x, dtype):
    if x.dtype.kind == "f" and x.dtype != dtype:
        # NaN/inf/out-of-range floats cast as PyTorch does (inf on float overflow, unspecified
        # integers), without NumPy's "invalid value / overflow encountered in cast" warnings
        with np.errstate(invalid="ignore", over="ignore"):
            return x.astype(dtype)
    if x.dtype.kind == "c" and dtype not in ("complex64", "complex128", "bool"):
        # the real part (the frontend warns, as PyTorch; NumPy's ComplexWarning would repeat it)
        with np.errstate(invalid="ignore", over="ignore"):
            return x.real.astype(dtype)
    return x.astype(dtype)


def full(shape, value, dtype):
    # zeros (most fills: zeros, new buffers, index padding) from np.zeros: 0.14 us against np.full's 0.65
    if value.__class__ in (int, float, bool) and value == 0 and math.copysign(1.0, value) > 0:   # (not -0.0)
        return np.zeros(shape, dtype=dtype)
    return np.full(shape, value, dtype=dtype)


def assign(dst, src):
    np.copyto(dst, src, casting="unsafe")


def index_put(x, key, values, accumulate):
    if accumulate:
        np.add.at(x, key, values)
    else:
        x[key] = values


def _prefix(idx):
    return tuple(slice(0, n) for n in idx.shape)


def _scatter_key(idx, axis):
    # full index tuple: idx along `axis`, positions of idx elsewhere (idx may be smaller than x)
    grids = list(np.indices(idx.shape, sparse=True))
    grids[axis] = idx
    return tuple(grids)


def index(x, key):
    # one integer vector along the first axis (an embedding's lookup, index_select): take is 2-3x
    # faster than the general advanced-indexing machinery (2.6 against 7.1 us for 512 rows of 64)
    if type(key) is tuple and len(key) == 1 and type(key[0]) is ndarray and key[0].ndim == 1 \
            and key[0].dtype.kind in "iu" and x.ndim:
        return x.take(key[0], axis=0)
    return _arr(x[key])


def _flat_key(x, idx, axis):
    """Flat positions in C-contiguous x of the targets of idx along axis, or None (x not C-contiguous,
    an index outside [0, n): the grid key's rules apply). One index array instead of a grid per axis:
    measured 95 against 234 us (scatter) and 111 against 720 us (scatter_add) for a (64, 6, 144) idx."""
    if not x.flags.c_contiguous or idx.ndim != x.ndim or idx.ndim == 0 or idx.size == 0:
        return None
    if any(n > m for d, (n, m) in enumerate(zip(idx.shape, x.shape)) if d != axis):
        return None                      # positions outside x: the grid key raises
    if idx.min() < 0 or idx.max() >= x.shape[axis]:
        return None
    strides = [st // x.itemsize for st in x.strides] if x.size > 1 else [0] * x.ndim
    base = np.zeros((), np.int64)
    for d, n in enumerate(idx.shape):
        if d != axis and n > 1:
            base = base + (np.arange(n, dtype=np.int64) * strides[d]).reshape((-1,) + (1,) * (idx.ndim - 1 - d))
    flat = idx.astype(np.int64) if strides[axis] == 1 else idx * np.int64(strides[axis])
    flat += base
    return flat.reshape(-1)


def scatter(x, idx, src, axis):
    flat = _flat_key(x, idx, axis)
    scalar = not isinstance(src, ndarray) or src.ndim == 0
    if flat is not None:
        x.reshape(-1)[flat] = src if scalar else src[_prefix(idx)].reshape(-1)
    elif scalar:
        x[_scatter_key(idx, axis)] = src
    else:
        x[_scatter_key(idx, axis)] = src[_prefix(idx)]


def scatter_add(x, idx, src, axis):
    flat = _flat_key(x, idx, axis)
    if flat is not None:
        np.add.at(x.reshape(-1), flat, src[_prefix(idx)].reshape(-1))   # the same order as the grid key's
    else:
        np.add.at(x, _scatter_key(idx, axis), src[_prefix(idx)])   # add.at sums duplicates


def solve(a, b):
    return np.linalg.solve(a, b)


def inv(a):
    return np.linalg.inv(a)


def uniform(state, shape, dtype):
    r = state.random(shape, dtype=np.float64 if dtype not in ("float32",) else np.float32).astype(dtype, copy=False)
    if dtype == "float16":      # rounding to float16 can reach 1.0; keep draws in [0, 1)
        np.minimum(r, np.nextafter(np.float16(1), np.float16(0)), out=r)
    return _arr(r)


def normal(state, shape, dtype):
    return _arr(state.standard_normal(shape, dtype=np.float64 if dtype not in ("float32",) else np.float32)
                .astype(dtype, copy=False))


def randint(state, low, high, shape, dtype):
    return _arr(state.integers(low, high, size=shape, dtype=np.int64).astype(dtype, copy=False))


def randperm(state, n, dtype):
    return state.permutation(n).astype(dtype, copy=False)


def bernoulli(state, p):
    return _arr((state.random(p.shape) < p).astype(p.dtype))      # 0-d p: NumPy gives a scalar


# samplers of the random-distribution family (dispatch/optional_random.py): float32 or float64 in,
# valid parameters only (the frontend maps edge cases)
def standard_gamma(state, alpha):
    return np.asarray(state.standard_gamma(alpha, dtype=alpha.dtype), dtype=alpha.dtype)    # 0-d: a scalar


def poisson(state, rate):
    return _arr(state.poisson(rate).astype(rate.dtype))


def binomial(state, count, prob):
    return _arr(state.binomial(count.astype(np.int64), prob).astype(count.dtype))


def clip(x, lo, hi):
    if lo is None and hi is None:
        return x.copy()
    return _arr(np.clip(x, lo, hi))


_RNG_FORMAT = "tensorplug.numpy.rng/1"


def rng_get_state(state) -> bytes:
    """The generator's bit_generator.state (a dict of ints and strings) as UTF-8 JSON; never pickle."""
    doc = {"format": _RNG_FORMAT, "bit_generator": state.bit_generator.state}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")


def rng_set_state(data) -> np.random.Generator:
    try:
        doc = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, TypeError) as e:
        raise ValueError(f"not a numpy generator state: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != _RNG_FORMAT or not isinstance(doc.get("bit_generator"), dict):
        raise ValueError(f"not a numpy generator state (expected format {_RNG_FORMAT!r})")
    st = doc["bit_generator"]
    name = st.get("bit_generator")
    if name != "PCG64":
        raise ValueError(f"unsupported bit generator {name!r} (expected 'PCG64')")
    bg = np.random.PCG64()
    try:
        bg.state = st
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"invalid PCG64 state: {e}") from None
    return np.random.Generator(bg)


def build() -> dict:
    k = {name: _pointwise(fn) for name, fn in _UFUNCS.items() if fn is not None}
    k["erf"] = _erf
    k["round"] = _round
    k["sign"] = _sign
    k["sigmoid"] = _sigmoid
    k["pow"] = _pow
    assert all(n in k for n in (*UNARY, *BINARY))
    k.update(
        from_numpy=lambda a: a,
        to_numpy=lambda x: x,
        full=full,
        arange=lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype),
        astype=astype,
        copy=lambda x: np.array(x, order="C", copy=True),
        assign=assign,
        rng_new=lambda seed: np.random.Generator(np.random.PCG64(seed)),
        uniform=uniform, normal=normal, randint=randint, randperm=randperm, bernoulli=bernoulli,
        standard_gamma=standard_gamma, poisson=poisson, binomial=binomial,
        rng_get_state=rng_get_state, rng_set_state=rng_set_state,
        where=_where,
        sum=_sum, prod=_reduce(np.multiply),
        max=_minmax(np.maximum), min=_minmax(np.minimum), any=_minmax(np.logical_or), all=_minmax(np.logical_and),
        argmax=_arg(np.argmax), argmin=_arg(np.argmin),
        cumsum=_scan(np.add), cumprod=_scan(np.multiply),
        argsort=argsort,
        reshape=lambda x, shape: x.reshape(shape),
        permute=lambda x, axes: x.transpose(axes),
        broadcast_to=lambda x, shape: np.broadcast_to(x, shape),
        slice=lambda x, key: x[key + (Ellipsis,)] if Ellipsis not in key else x[key],  # always a view
        diagonal=lambda x, offset, a1, a2: np.diagonal(x, offset, a1, a2),
        flip=lambda x, axes: _arr(np.flip(x, axes)),
        concat=lambda xs, axis: np.concatenate(xs, axis=axis),
        pad=pad,
        index=index,
        index_put=index_put,
        gather=lambda x, idx, axis: np.take_along_axis(x, idx, axis=axis),
        scatter=scatter, scatter_add=scatter_add,
        nonzero=lambda x: tuple(i.astype(np.int64, copy=False) for i in np.nonzero(x)),
        matmul=lambda a, b: _arr(np.matmul(a, b)),
        inv=inv, solve=solve,
        clip=clip,
    )
    from . import complex as complex_kernels, conv, fft, norm
    k.update(conv.build())
    k.update(norm.build())
    k.update(complex_kernels.build())
    k.update(fft.build())
    from . import vision
    k.update(vision.build())
    from . import sparse
    k.update(sparse.build())
    from . import linalg
    k.update(linalg.build())
    from . import rnn
    k.update(rnn.build())
    from . import transformer          # softmax, log_softmax and the transformer-block kernels
    k.update(transformer.build())
    from . import attention            # scaled_dot_product_attention forward and backward
    k.update(attention.build())
    from . import loss                 # cross_entropy (class-index targets) forward and backward
    k.update(loss.build())
    from . import optim_loops          # adam_step: one parameter's Adam update in one loop
    k.update(optim_loops.build(k))
    from . import bfloat16
    k.update(bfloat16.build(k))         # bfloat16 as PyTorch computes it; other dtypes pass through
    return k
