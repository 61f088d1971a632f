"""Fused kernels: one memory pass where a chain of CuPy ufuncs would take several, and elementwise
formulas whose CuPy ufunc differs from NumPy on edge values.

Every kernel here is one formula written twice:
- CUDA C for `cupy.ElementwiseKernel` / `cupy.ReductionKernel` (compiled on first use, per device,
  cached by CuPy), used whenever the array module has those classes (real CuPy);
- an array-module (`xp`) expression with the same semantics, used where there is no CUDA compiler:
  the NumPy-based CuPy stand-in of the CPU tests. On a GPU, tests/cuda/test_cuda_gpu.py compares
  the two lowerings.

`{C}` in a CUDA template is the computation type: `double` for float64 data, `float` otherwise
(float16 is computed in float, as NumPy and CuPy do).
"""
from __future__ import annotations

import numpy as np

_M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15

_MIX = r"""
__device__ __forceinline__ unsigned long long tp_mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
__device__ __forceinline__ unsigned long long tp_bits(unsigned long long key, unsigned long long c) {
    return tp_mix64(key + c * 0x9E3779B97F4A7C15ULL);
}
"""


def mix64(z: int) -> int:
    """SplitMix64's finalizer on a Python int (the same function as tp_mix64)."""
    z &= _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _ctype(dtype) -> str:
    return "double" if np.dtype(dtype) == np.float64 else "float"


def _cname(dtype) -> str:
    return "float64" if np.dtype(dtype) == np.float64 else "float32"


# integer division with Python's (NumPy's) rounding; b == 0 gives 0 (the frontend refuses it)
_INT_DIVMOD = r"""
long long a = (long long)x, b = (long long)z;
long long q = 0, r = 0;
if (b != 0) {
    q = a / b; r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) { q -= 1; r += b; }
}
"""
# unsigned: no sign adjustment
_UINT_DIVMOD = r"""
unsigned long long a = (unsigned long long)x, b = (unsigned long long)z;
unsigned long long q = 0, r = 0;
if (b != 0) { q = a / b; r = a % b; }
"""
# NumPy's npy_divmod, line for line (floor_divide and remainder of floats)
_FLOAT_DIVMOD = r"""
{C} a = ({C})x, b = ({C})z;
{C} mod = fmod(a, b), q;
if (b == 0) {
    q = a / b;
} else {
    {C} div = (a - mod) / b;
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) { mod += b; div -= 1; }
    } else {
        mod = copysign(({C})0, b);
    }
    if (div != 0) {
        q = floor(div);
        if (div - q > ({C})0.5) q += 1;
    } else {
        q = copysign(({C})0, a / b);
    }
}
"""


class Fusion:
    """The fused kernels over array module `xp` (CUDA lowering when xp is CuPy)."""

    def __init__(self, xp):
        self.xp = xp
        self.native = hasattr(xp, "ElementwiseKernel") and hasattr(xp, "ReductionKernel")
        self._cache = {}

    # -- compiling ---------------------------------------------------------------------------------
    def _ew(self, key, in_params, out_params, body, preamble=""):
        k = self._cache.get(key)
        if k is None:
            k = self._cache[key] = self.xp.ElementwiseKernel(in_params, out_params, body, "tp_" + key[0],
                                                             preamble=preamble)
        return k

    def _red(self, key, in_params, out_params, map_expr, reduce_expr, post, identity, reduce_type):
        k = self._cache.get(key)
        if k is None:
            k = self._cache[key] = self.xp.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post,
                                                           identity, "tp_" + key[0], reduce_type=reduce_type)
        return k

    def _out(self, out, like, dtype=None):
        return self.xp.empty(like.shape, dtype=dtype or like.dtype) if out is None else out

    def _finish(self, r, out):
        """The xp lowering's result `r` (written into `out` when given)."""
        if out is None:
            return r if isinstance(r, self.xp.ndarray) else self.xp.asarray(r)
        self.xp.copyto(out, r, casting="unsafe")
        return out

    # -- elementwise math --------------------------------------------------------------------------
    def sigmoid(self, x, out=None):
        """1 / (1 + exp(-x)) without overflow: exp(-|x|) on either branch."""
        xp = self.xp
        if self.native:
            c = _ctype(x.dtype)
            k = self._ew(("sigmoid", c), "T x", "T y",
                         f"{c} v = ({c})x; {c} e = exp(-fabs(v)); "
                         f"y = (T)(v >= 0 ? 1 / (1 + e) : e / (1 + e));")
            return k(x, self._out(out, x))
        e = xp.exp(-xp.abs(x))
        one = xp.ones((), dtype=x.dtype)
        r = xp.where(x >= 0, one / (one + e), e / (one + e)).astype(x.dtype, copy=False)
        return self._finish(r, out)

    def erf(self, x, out=None):
        if self.native:
            c = _ctype(x.dtype)
            return self._ew(("erf", c), "T x", "T y", f"y = (T)erf(({c})x);")(x, self._out(out, x))
        import math
        f = np.frompyfunc(math.erf, 1, 1)
        host = np.asarray(f(self.xp.asnumpy(x).astype(np.float64)), dtype=np.float64).astype(x.dtype)
        return self._finish(self.xp.asarray(host), out)

    def divmod_op(self, which, x, z, out=None):
        """floor_divide ("div"), remainder ("mod") or fmod ("fmod") with NumPy's semantics for every
        numeric dtype (float: npy_divmod; integers exact in 64 bits, not through double)."""
        xp = self.xp
        if not self.native:
            fn = {"div": xp.floor_divide, "mod": xp.remainder, "fmod": xp.fmod}[which]
            return fn(x, z) if out is None else fn(x, z, out=out)
        dt = x.dtype if isinstance(x, xp.ndarray) else z.dtype
        kind = np.dtype(dt).kind
        if kind == "f":
            c = _ctype(dt)
            pre = _FLOAT_DIVMOD.replace("{C}", c)
            res = {"div": "q", "mod": "mod", "fmod": f"fmod(({c})x, ({c})z)"}[which]
        else:
            pre = _UINT_DIVMOD if kind in "ub" else _INT_DIVMOD
            res = {"div": "q", "mod": "r", "fmod": "(b == 0 ? 0 : a % b)"}[which]
        key = ("divmod_" + which, kind, _ctype(dt) if kind == "f" else "")
        k = self._ew(key, "T x, T z", "T y", pre + f"y = (T)({res});")
        x, z = _typed(xp, x, dt), _typed(xp, z, dt)
        if out is None:
            return k(x, z)
        return k(x, z, out)

    def int_pow(self, x, z, out=None):
        """Integer power by squaring in 64-bit unsigned arithmetic (wraps like NumPy; exponents >= 0)."""
        xp = self.xp
        if not self.native:
            return xp.power(x, z) if out is None else xp.power(x, z, out=out)
        dt = x.dtype if isinstance(x, xp.ndarray) else z.dtype
        body = ("unsigned long long base = (unsigned long long)(long long)x, r = 1; long long e = (long long)z; "
                "while (e > 0) { if (e & 1) r *= base; base *= base; e >>= 1; } y = (T)(long long)r;")
        k = self._ew(("ipow",), "T x, T z", "T y", body)
        x, z = _typed(xp, x, dt), _typed(xp, z, dt)
        return k(x, z) if out is None else k(x, z, out)

    # -- softmax -----------------------------------------------------------------------------------
    def _sumexp(self, x, m, axis):
        """sum(exp(x - m)) along axis (keepdims), accumulated in float (float64 for float64)."""
        xp = self.xp
        if self.native:
            c, cn = _ctype(x.dtype), _cname(x.dtype)
            k = self._red(("sumexp", c), "T x, T m", f"{cn} s", f"exp(({c})x - ({c})m)", "a + b", "s = a", "0", c)
            return k(x, m, axis=axis, keepdims=True)
        acc = np.float64 if x.dtype == np.float64 else np.float32
        return xp.sum(xp.exp(x.astype(acc) - m.astype(acc)), axis=axis, keepdims=True)

    def softmax(self, x, axis):
        xp = self.xp
        m = xp.amax(x, axis=axis, keepdims=True)
        s = self._sumexp(x, m, axis)
        if self.native:
            c = _ctype(x.dtype)
            return self._ew(("softmax", c), "T x, T m, S s", "T y", f"y = (T)(exp(({c})x - ({c})m) / s);")(x, m, s)
        return (xp.exp(x.astype(s.dtype) - m.astype(s.dtype)) / s).astype(x.dtype)

    def log_softmax(self, x, axis):
        xp = self.xp
        m = xp.amax(x, axis=axis, keepdims=True)
        ls = xp.log(self._sumexp(x, m, axis))
        if self.native:
            c = _ctype(x.dtype)
            return self._ew(("log_softmax", c), "T x, T m, S ls", "T y", f"y = (T)(({c})x - ({c})m - ls);")(x, m, ls)
        return (x.astype(ls.dtype) - m.astype(ls.dtype) - ls).astype(x.dtype)

    # -- batch norm --------------------------------------------------------------------------------
    def sq_dev_sum(self, x, m, axes):
        """sum((x - m)^2) over axes (m broadcasts against x), in m's dtype, without a temporary."""
        xp = self.xp
        if self.native:
            c, cn = _ctype(m.dtype), _cname(m.dtype)
            k = self._red(("sqdev", c), f"T x, {cn} m", f"{cn} v", f"(({c})x - m) * (({c})x - m)", "a + b", "v = a",
                          "0", c)
            return k(x, m, axis=axes)
        d = x.astype(m.dtype) - m
        return xp.sum(d * d, axis=axes)

    def bn_apply(self, x, mean, scale, bias):
        """(x - mean) * scale + bias in the statistics' precision, written in x's dtype (one pass)."""
        if self.native:
            return self._ew(("bn_apply",), "T x, C m, C s, C b", "T y", "y = (T)(((C)x - m) * s + b);")(
                x, mean, scale, bias)
        return ((x.astype(mean.dtype) - mean) * scale + bias).astype(x.dtype)

    # -- max pooling -------------------------------------------------------------------------------
    def pool_step(self, v, j, best, slot):
        """One kernel offset of a running max: where v beats best (strictly, or v is NaN), best = v
        and slot = j. Updates best and slot in place."""
        xp = self.xp
        if self.native:
            k = self._ew(("pool_step",), "T v, int32 j", "T best, int32 slot",
                         "bool nan_v = !(v == v); if (nan_v || v > best) { best = v; slot = j; }")
            k(v, np.int32(j), best, slot)
            return
        upd = v > best
        if v.dtype.kind == "f":
            upd = xp.logical_or(upd, xp.isnan(v))
        xp.copyto(best, v, where=upd)
        xp.copyto(slot, xp.full((), j, dtype=slot.dtype), where=upd)

    # -- random numbers: counter-based SplitMix64 --------------------------------------------------
    def _bits(self, key, off, n):
        """uint64 bits of counters off .. off + n - 1 (the xp lowering of tp_bits)."""
        xp = self.xp
        c = xp.arange(n, dtype=np.uint64) + np.uint64(off)
        z = c * np.uint64(GOLDEN) + np.uint64(key)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    def rand_uniform(self, key, off, shape, dtype):
        """Floats k * 2**-b in [0, 1), b the significand width of dtype (so no draw rounds up to 1)."""
        xp = self.xp
        bits = {"float16": 11, "float32": 24}.get(np.dtype(dtype).name, 53)
        y = xp.empty(shape, dtype=dtype)
        if self.native:
            k = self._ew(("uniform",), "uint64 key, uint64 off, int32 bits, float64 scale", "T y",
                         "y = (T)((double)(tp_bits(key, off + i) >> (64 - bits)) * scale);", preamble=_MIX)
            k(np.uint64(key), np.uint64(off), np.int32(bits), np.float64(2.0 ** -bits), y)
            return y
        z = self._bits(key, off, y.size) >> np.uint64(64 - bits)
        return (z.astype(np.float64) * 2.0 ** -bits).astype(dtype).reshape(shape)

    def rand_normal(self, key, off, shape, dtype):
        """Box-Muller from the uniforms of counters 2i and 2i + 1 (u1 in (0, 1], u2 in [0, 1))."""
        xp = self.xp
        y = xp.empty(shape, dtype=dtype)
        wide = np.dtype(dtype) == np.float64
        bits = 53 if wide else 24
        if self.native:
            c = _ctype(dtype)
            body = (f"unsigned long long c = 2 * (off + i); "
                    f"{c} u1 = ({c})((double)((tp_bits(key, c) >> {64 - bits}) + 1) * {2.0 ** -bits!r}); "
                    f"{c} u2 = ({c})((double)(tp_bits(key, c + 1) >> {64 - bits}) * {2.0 ** -bits!r}); "
                    f"y = (T)(sqrt(({c})-2 * log(u1)) * cos(({c}){2 * np.pi!r} * u2));")
            self._ew(("normal", c), "uint64 key, uint64 off", "T y", body, preamble=_MIX)(
                np.uint64(key), np.uint64(off), y)
            return y
        z = self._bits(key, 2 * off, 2 * y.size) >> np.uint64(64 - bits)
        acc = np.float64 if wide else np.float32
        u = z.astype(np.float64) * 2.0 ** -bits
        u1 = (u[0::2] + 2.0 ** -bits).astype(acc)
        u2 = u[1::2].astype(acc)
        r = xp.sqrt(acc(-2) * xp.log(u1)) * xp.cos(acc(2 * np.pi) * u2)
        return r.astype(dtype).reshape(shape)

    def rand_int(self, key, off, low, high, shape, dtype):
        """low + bits % (high - low), computed in 64 bits (modulo bias below 2**-40 for ranges < 2**24)."""
        xp = self.xp
        y = xp.empty(shape, dtype=dtype)
        m = (int(high) - int(low)) & _M64
        if self.native:
            k = self._ew(("randint",), "uint64 key, uint64 off, uint64 m, int64 low", "T y",
                         "y = (T)((long long)(tp_bits(key, off + i) % m) + low);", preamble=_MIX)
            k(np.uint64(key), np.uint64(off), np.uint64(m), np.int64(low), y)
            return y
        r = (self._bits(key, off, y.size) % np.uint64(m)).astype(np.int64) + np.int64(low)
        return r.astype(dtype).reshape(shape)

    def rand_bits(self, key, off, n):
        xp = self.xp
        if self.native:
            y = xp.empty((n,), dtype=np.uint64)
            self._ew(("bits",), "uint64 key, uint64 off", "uint64 y", "y = tp_bits(key, off + i);",
                     preamble=_MIX)(np.uint64(key), np.uint64(off), y)
            return y
        return self._bits(key, off, n)

    def bernoulli(self, key, off, p):
        """1 where a uniform draw (53 bits) is below p, else 0, in p's dtype and shape (C order)."""
        xp = self.xp
        if self.native:
            y = xp.empty(p.shape, dtype=p.dtype)
            k = self._ew(("bernoulli",), "T p, uint64 key, uint64 off", "T y",
                         "y = (T)((((double)(tp_bits(key, off + i) >> 11) * 1.1102230246251565e-16) < (double)p) "
                         "? 1.0f : 0.0f);",
                         preamble=_MIX)
            k(p, np.uint64(key), np.uint64(off), y)
            return y
        u = (self._bits(key, off, p.size) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        return (u.reshape(p.shape) < p.astype(np.float64)).astype(p.dtype)


def _typed(xp, v, dt):
    """A Python scalar as a NumPy scalar of dtype dt (a typed kernel argument); arrays unchanged."""
    return v if isinstance(v, xp.ndarray) else np.dtype(dt).type(v)
