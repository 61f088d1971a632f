"""CuPy kernels for device "cuda": the required primitives and the optional pointwise kernels.

Every kernel is written over an array module `xp` (CuPy in production) and `cx` (cupyx), so the same
code also runs on the NumPy-based CuPy stand-in of the CPU tests. What CuPy does differently from
NumPy is absorbed here, never in the frontend:

- reductions return 0-d device arrays (CuPy never returns host scalars; `.item()` on the tensor is
  the one synchronisation), and every kernel returns an array;
- Python scalars in binary kernels: CuPy 13 resolves their dtype by value (legacy NumPy rules), so
  `int8_array + 1000` would widen; results are cast back to the operand's dtype (the frontend
  already decided the result dtype);
- accumulation with repeated indices goes through `cupyx.scatter_add` (atomicAdd), which covers
  float32, int32, uint32 and uint64 only (newer CuPy also float16/float64): int64 runs as uint64
  (same two's-complement sum), narrow integers and bool through an int32 copy, float16 through
  float32, float64 through the host where CuPy lacks it;
- `scatter` (last write wins) is made deterministic with `cupyx.scatter_max` over write positions:
  CuPy stores an undefined one of several values written to one place;
- CuPy's float floor_divide/remainder round differently from NumPy on some inputs, its integer
  fmod/power go through double: fused kernels (fused.py) implement NumPy's formulas (CuPy's sign
  maps NaN to 0, which is PyTorch's sign, the SPI's); floor/ceil/trunc/round of integers return them unchanged (CuPy returns floats);
- argmax/argmin treat NaN as the extreme (first NaN), argsort puts NaN last (first when descending)
  and is stable, independent of how the CuPy version orders NaN;
- singular matrices raise (CuPy returns garbage unless `cupyx.errstate(linalg="raise")`);
- random numbers come from a counter-based generator (SplitMix64 of key + counter), one state per
  generator, drawn on the device that owns it (the per-device kernel table binds the device).

Out-of-range indices are the frontend's business: it checks them before any kernel runs (CuPy
would wrap them silently).
"""
from __future__ import annotations

import json
import math

import numpy as np

from tensorplug.dispatch.backend_api import BINARY, UNARY

from .fused import mix64

_UFUNCS = {
    "neg": "negative", "abs": "absolute", "exp": "exp", "log": "log", "sqrt": "sqrt", "sin": "sin",
    "cos": "cos", "tan": "tan", "tanh": "tanh", "logical_not": "logical_not", "bitwise_not": "invert",
    "isnan": "isnan",
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "maximum": "maximum",
    "minimum": "minimum", "atan2": "arctan2", "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
    "gt": "greater", "ge": "greater_equal", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_xor": "logical_xor", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor", "left_shift": "left_shift", "right_shift": "right_shift",
    # optional
    "log1p": "log1p", "expm1": "expm1", "sinh": "sinh", "cosh": "cosh", "asin": "arcsin", "acos": "arccos",
    "atan": "arctan", "isinf": "isinf", "isfinite": "isfinite",
}
_BOOL_OUT = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                       "logical_not", "isnan", "isinf", "isfinite"))
_ROUNDING = {"floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "rint"}
_ATOMIC = frozenset(("float32", "int32", "uint32", "uint64"))     # what cupyx.scatter_add always takes


class CudaRng:
    """A generator state: a 64-bit key (mixed from the seed) and a counter of values drawn. Draw n
    values: counters offset .. offset + n - 1. Plain attributes, so `copy.deepcopy` snapshots it."""

    def __init__(self, seed):
        self.seed = int(seed) % 2**64
        self.key = mix64(self.seed)
        self.offset = 0

    def take(self, n):
        off = self.offset
        self.offset += int(n)
        return off

    def __repr__(self):
        return f"<CudaRng seed={self.seed} offset={self.offset}>"

    FORMAT = "tensorplug.cuda.rng/1"

    def to_bytes(self) -> bytes:
        """The state as UTF-8 JSON: the SplitMix64 key (from the seed) and the counter."""
        doc = {"format": self.FORMAT, "seed": self.seed, "key": self.key, "offset": self.offset}
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data) -> "CudaRng":
        try:
            doc = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, TypeError) as e:
            raise ValueError(f"not a cuda generator state: {e}") from None
        if not isinstance(doc, dict) or doc.get("format") != cls.FORMAT:
            raise ValueError(f"not a cuda generator state (expected format {cls.FORMAT!r})")
        fields = [doc.get(f) for f in ("seed", "key", "offset")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64 for v in fields):
            raise ValueError("invalid cuda generator state: seed, key and offset must be integers in [0, 2**64)")
        st = cls(fields[0])
        st.key, st.offset = fields[1], fields[2]
        return st


def build(xp, cx, fusion, status=None) -> dict:
    """The kernel table over array module xp, cupyx-like module cx and a fused.Fusion. `status`
    (a dict) records what fallbacks were needed (scatter_add dtypes CuPy refused)."""
    nd = xp.ndarray
    int64, uint64, int32 = np.dtype("int64"), np.dtype("uint64"), np.dtype("int32")
    status = {} if status is None else status

    def arr(r):
        return r if isinstance(r, nd) else xp.asarray(r)

    # -- pointwise ---------------------------------------------------------------------------------
    def unary(name, uf):
        def kernel(x, out=None):
            if out is not None:
                uf(x, out=out)
                return out
            return arr(uf(x))
        kernel.__name__ = name
        return kernel

    def binary(name, uf, bool_out):
        def kernel(x, y, out=None):
            if out is not None:
                uf(x, y, out=out)
                return out
            r = uf(x, y)
            if not isinstance(r, nd):
                return xp.asarray(r)
            want = np.bool_ if bool_out else (x.dtype if isinstance(x, nd) else y.dtype if isinstance(y, nd)
                                              else None)
            if want is not None and r.dtype != want:        # a Python scalar widened the result
                r = r.astype(want)
            return r
        kernel.__name__ = name
        return kernel

    def unchanged_for(kinds, name, uf):
        """uf, except that arrays of these dtype kinds come back unchanged (copied): floor etc. of
        integers (CuPy would return floats), sign of a bool."""
        inner = unary(name, uf)

        def kernel(x, out=None):
            if x.dtype.kind in kinds:
                if out is None:
                    return x.copy()
                xp.copyto(out, x)
                return out
            return inner(x, out)
        kernel.__name__ = name
        return kernel

    def divmod_kernel(which):
        def kernel(x, y, out=None):
            r = fusion.divmod_op(which, x, y, out)
            return out if out is not None else arr(r)
        return kernel

    def power(x, y, out=None):
        dt = x.dtype if isinstance(x, nd) else y.dtype
        if dt.kind in "iu":
            r = fusion.int_pow(x, y, out)
        else:
            r = xp.power(x, y) if out is None else xp.power(x, y, out=out)
        if out is not None:
            return out
        r = arr(r)
        return r if r.dtype == dt else r.astype(dt)

    k = {}
    for name, uf_name in _UFUNCS.items():
        uf = getattr(xp, uf_name)
        k[name] = binary(name, uf, name in _BOOL_OUT) if name in BINARY else unary(name, uf)
    for name, uf_name in _ROUNDING.items():
        k[name] = unchanged_for("iub", name, getattr(xp, uf_name))
    k["sign"] = unchanged_for("b", "sign", xp.sign)
    k["floor_divide"], k["remainder"], k["fmod"] = (divmod_kernel(w) for w in ("div", "mod", "fmod"))
    k["pow"] = power
    k["erf"] = lambda x, out=None: fusion.erf(x, out)
    k["sigmoid"] = lambda x, out=None: fusion.sigmoid(x, out) if x.dtype.kind != "c" else complex_sigmoid(x, out)

    def complex_sigmoid(x, out=None):       # (no sign branches for complex values)
        r = 1 / (1 + xp.exp(-x))
        if out is None:
            return r
        xp.copyto(out, r)
        return out
    assert all(n in k for n in (*UNARY, *BINARY)), sorted(set((*UNARY, *BINARY)) - set(k))

    def where(c, x, y):
        r = xp.where(c, x, y)
        want = x.dtype if isinstance(x, nd) else y.dtype if isinstance(y, nd) else None
        return r.astype(want) if want is not None and r.dtype != want else arr(r)

    def clip(x, lo, hi):
        r = x
        if lo is not None:
            r = xp.maximum(r, lo)           # NaN in x propagates, as np.clip
        if hi is not None:
            r = xp.minimum(r, hi)
        if r is x:
            return x.copy()
        return r if r.dtype == x.dtype else r.astype(x.dtype)

    # -- creation and transfer -------------------------------------------------------------------
    def from_numpy(a):
        if not a.flags.c_contiguous:         # (ascontiguousarray would turn 0-d into 1-d)
            a = a.copy(order="C")
        return xp.asarray(a)

    def to_numpy(x):
        return xp.asnumpy(x)

    def full(shape, value, dtype):
        return xp.full(shape, value, dtype=dtype)

    def arange(start, stop, step, dtype):
        return xp.arange(start, stop, step, dtype=dtype)

    def astype(x, dtype):
        if x.dtype.kind == "c" and np.dtype(dtype).kind not in "cb":
            x = x.real              # the real part, without CuPy's / NumPy's discard warning
        return x.astype(dtype)

    def copy(x):
        return x.copy(order="C")

    def assign(dst, src):
        xp.copyto(dst, src, casting="unsafe")

    # -- random ------------------------------------------------------------------------------------
    def rng_new(seed):
        return CudaRng(seed)

    def uniform(state, shape, dtype):
        shape = tuple(shape)
        return fusion.rand_uniform(state.key, state.take(math.prod(shape)), shape, dtype)

    def normal(state, shape, dtype):
        shape = tuple(shape)
        return fusion.rand_normal(state.key, state.take(math.prod(shape)), shape, dtype)

    def randint(state, low, high, shape, dtype):
        shape = tuple(shape)
        return fusion.rand_int(state.key, state.take(math.prod(shape)), low, high, shape, dtype)

    def randperm(state, n, dtype):
        bits = fusion.rand_bits(state.key, state.take(n), n)
        return xp.argsort(bits).astype(dtype)

    def bernoulli(state, p):
        return fusion.bernoulli(state.key, state.take(p.size), p)

    # samplers of dispatch/optional_random.py: CuPy's RandomState, seeded from the generator's key and
    # counter, so manual_seed and get_state / set_state govern them like every other draw
    def _sampler(state, n):
        return xp.random.RandomState(np.uint64(mix64(state.key ^ mix64(state.take(max(int(n), 1))))))

    def standard_gamma(state, alpha):
        return arr(_sampler(state, alpha.size).standard_gamma(alpha, dtype=alpha.dtype))

    def poisson(state, rate):
        return arr(_sampler(state, rate.size).poisson(rate, dtype=np.int64)).astype(rate.dtype)

    def binomial(state, count, prob):
        n = count.astype(np.int64)
        return arr(_sampler(state, count.size).binomial(n, prob, dtype=np.int64)).astype(count.dtype)

    # -- reductions --------------------------------------------------------------------------------
    def reduce(fn):
        def kernel(x, axes, keepdims, dtype=None):
            return arr(fn(x, axis=axes, keepdims=keepdims, dtype=dtype or x.dtype))
        return kernel

    def minmax(fn):
        def kernel(x, axes, keepdims):
            return arr(fn(x, axis=axes, keepdims=keepdims))
        return kernel

    def arg(fn):
        def kernel(x, axis, keepdims):
            if x.ndim == 0:
                return xp.zeros((), dtype=int64)
            r = arr(fn(x, axis=axis))
            if x.dtype.kind == "f":          # NaN is the extreme: the first NaN wins
                nan = xp.isnan(x)
                r = xp.where(xp.any(nan, axis=axis), xp.argmax(nan, axis=axis), r)
            r = r.astype(int64, copy=False)
            if keepdims:
                shape = (1,) * x.ndim if axis is None else x.shape[:axis] + (1,) + x.shape[axis + 1:]
                r = r.reshape(shape)
            return arr(r)
        return kernel

    def argsort(x, axis, descending, stable):
        if x.dtype.kind == "b":
            x = x.view(np.uint8)
        kind = x.dtype.kind
        if descending:
            if kind == "u":
                key = np.iinfo(x.dtype).max - x
            elif kind == "i":
                key = xp.invert(x)            # ~v = -v - 1: decreasing, no overflow at the minimum
            else:
                key = xp.negative(x)
        else:
            key = x
        if kind == "f":
            # NaN first (descending) or last (ascending): order the rest, then stably move the NaN
            nan = xp.isnan(x)
            order = xp.argsort(xp.where(nan, xp.zeros((), dtype=x.dtype), key), axis=axis)
            nan_sorted = xp.take_along_axis(nan, order, axis=axis)
            flag = xp.logical_not(nan_sorted) if descending else nan_sorted
            reorder = xp.argsort(flag.view(np.uint8), axis=axis)
            return xp.take_along_axis(order, reorder, axis=axis).astype(int64, copy=False)
        return xp.argsort(key, axis=axis).astype(int64, copy=False)

    # -- movement ----------------------------------------------------------------------------------
    def slice_(x, key):
        return x[key + (Ellipsis,)] if Ellipsis not in key else x[key]

    def flip(x, axes):
        axes = set(a % x.ndim for a in axes) if x.ndim else set()
        return x[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim))]

    def pad(x, widths, mode, value=0):
        widths = tuple((int(a), int(b)) for a, b in widths)
        if mode == "constant":
            out = xp.full(tuple(n + a + b for n, (a, b) in zip(x.shape, widths)), value, dtype=x.dtype)
            out[tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, widths))] = x
            return out
        if mode not in ("reflect", "replicate", "circular"):
            raise ValueError(f"unknown padding mode {mode!r}")
        out = x
        for ax, (a, b) in enumerate(widths):
            if not (a or b):
                continue
            n = out.shape[ax]
            pos = np.arange(-a, n + b)
            if mode == "reflect":
                period = 2 * (n - 1)
                pos = np.abs(pos) % period if period else np.zeros_like(pos)
                pos = np.where(pos >= n, period - pos, pos)
            elif mode == "replicate":
                pos = np.clip(pos, 0, n - 1)
            else:
                pos = pos % n
            out = xp.take(out, xp.asarray(pos.astype(np.int64)), axis=ax)
        return out if out is not x else x.copy()

    # -- indexing ----------------------------------------------------------------------------------
    def accumulate(x, key, values):
        """x[key] += values with repeated positions summed (np.add.at)."""
        dt = x.dtype
        values = values.astype(dt, copy=False) if isinstance(values, nd) else xp.full((), values, dtype=dt)
        name = dt.name
        if dt.kind == "c":                       # the real and imaginary parts (views), each a float sum
            accumulate(x.real, key, values.real)
            accumulate(x.imag, key, values.imag)
            return
        if name in _ATOMIC:
            cx.scatter_add(x, key, values)
        elif name == "int64":                    # the same bits as an unsigned sum
            cx.scatter_add(x.view(uint64), key, values.view(uint64))
        elif name in ("float16", "float64") and status.get(f"scatter_add_{name}", True):
            try:
                cx.scatter_add(x, key, values)
            except TypeError:                    # an older CuPy: float32 for float16, the host for float64
                status[f"scatter_add_{name}"] = False
                accumulate(x, key, values)
        elif name == "float16":
            wide = x.astype(np.float32)
            cx.scatter_add(wide, key, values.astype(np.float32))
            xp.copyto(x, wide, casting="unsafe")
        elif name == "float64":
            host = xp.asnumpy(x)
            hkey = tuple(xp.asnumpy(k) if isinstance(k, nd) else k for k in key) if isinstance(key, tuple) \
                else (xp.asnumpy(key) if isinstance(key, nd) else key)
            np.add.at(host, hkey, xp.asnumpy(values))
            xp.copyto(x, xp.asarray(host))
        else:                                    # int8, int16, uint8, bool: sum in int32 (wraps alike)
            wide = x.astype(int32)
            cx.scatter_add(wide, key, values.astype(int32))
            xp.copyto(x, wide != 0 if name == "bool" else wide, casting="unsafe")

    def index_put(x, key, values, accumulate_):
        if accumulate_:
            accumulate(x, key, values)
        else:
            x[key] = values

    def grids(idx, axis):
        """Index arrays addressing, for each element of idx, its position with axis replaced by idx."""
        g = []
        for d, n in enumerate(idx.shape):
            if d == axis:
                g.append(idx)
            else:
                shape = [1] * idx.ndim
                shape[d] = n
                g.append(xp.arange(n, dtype=int64).reshape(shape))
        return tuple(g)

    def prefix(src, idx):
        """src cut to idx's shape (the part of src that is scattered), or a 0-d src broadcast."""
        if src.ndim == 0:
            return xp.broadcast_to(src, idx.shape)
        return src[tuple(slice(0, n) for n in idx.shape)]

    def scatter(x, idx, src, axis):
        if idx.size == 0:
            return
        src = prefix(src, idx) if isinstance(src, nd) else xp.full(idx.shape, src, dtype=x.dtype)
        key = grids(idx, axis)
        # last write wins, deterministically: every element writes the value of the last element
        # (in row-major order of idx) aimed at the same place
        lin = xp.zeros(idx.shape, dtype=int64)
        stride = 1
        for d in range(x.ndim - 1, -1, -1):
            lin = lin + key[d] * stride
            stride *= x.shape[d]
        small = x.size < 2**31 and idx.size < 2**31
        wdt = int32 if small else uint64
        winner = xp.zeros((x.size,), dtype=wdt)
        order = xp.arange(1, idx.size + 1, dtype=wdt).reshape(idx.shape)
        cx.scatter_max(winner, lin, order)
        pick = winner[lin].astype(int64) - 1
        x[key] = src.reshape(-1)[pick]

    def scatter_add(x, idx, src, axis):
        if idx.size == 0:
            return
        src = prefix(src, idx) if isinstance(src, nd) else xp.full(idx.shape, src, dtype=x.dtype)
        accumulate(x, grids(idx, axis), src)

    def index(x, key):
        return arr(x[key])

    def nonzero(x):
        return tuple(i.astype(int64, copy=False) for i in xp.nonzero(x))

    # -- linear algebra ----------------------------------------------------------------------------
    def linalg(fn):
        def kernel(*args):
            try:
                with cx.errstate(linalg="raise"):
                    return arr(fn(*args))
            except np.linalg.LinAlgError as e:
                raise np.linalg.LinAlgError(f"Singular matrix ({e})") from None
        return kernel

    def softmax(x, axis):
        return fusion.softmax(x, axis)

    def log_softmax(x, axis):
        return fusion.log_softmax(x, axis)

    k.update(
        from_numpy=from_numpy, to_numpy=to_numpy, full=full, arange=arange, astype=astype, copy=copy,
        assign=assign,
        rng_new=rng_new, rng_get_state=lambda state: state.to_bytes(), rng_set_state=CudaRng.from_bytes,
        uniform=uniform, normal=normal, randint=randint, randperm=randperm, bernoulli=bernoulli,
        where=where,
        sum=reduce(xp.sum), prod=reduce(xp.prod), max=minmax(xp.amax), min=minmax(xp.amin),
        any=minmax(xp.any), all=minmax(xp.all), argmax=arg(xp.argmax), argmin=arg(xp.argmin),
        cumsum=lambda x, axis: xp.cumsum(x, axis=axis, dtype=x.dtype),
        cumprod=lambda x, axis: xp.cumprod(x, axis=axis, dtype=x.dtype),
        argsort=argsort,
        reshape=lambda x, shape: x.reshape(shape),
        permute=lambda x, axes: x.transpose(axes),
        broadcast_to=lambda x, shape: xp.broadcast_to(x, shape),
        slice=slice_,
        diagonal=lambda x, offset, a1, a2: xp.diagonal(x, offset, a1, a2),
        flip=flip,
        concat=lambda xs, axis: xp.concatenate(xs, axis=axis),
        pad=pad,
        index=index, index_put=index_put,
        gather=lambda x, idx, axis: xp.take_along_axis(x, idx, axis),
        scatter=scatter, scatter_add=scatter_add, nonzero=nonzero,
        matmul=lambda a, b: arr(xp.matmul(a, b)),
        inv=linalg(xp.linalg.inv), solve=linalg(xp.linalg.solve),
        softmax=softmax, log_softmax=log_softmax, clip=clip,
    )
    if hasattr(xp, "random"):           # an array module without it runs the decompositions
        k.update(standard_gamma=standard_gamma, poisson=poisson, binomial=binomial)
    return k
