"""The record type of the op database, sample inputs, value generators and tolerances.

A record describes one backend kernel: which dtypes it must handle, how to make sample inputs for a
dtype, a float64 NumPy reference (written here, independently of any backend), the result dtype, the
tolerance per dtype, whether the result is a view, and frontend inputs that must raise.

Sample arguments are plain Python values, except:
- `A(value, layout)`: an array input, built on the backend with `from_numpy` in a given memory layout
  ("C" contiguous, "T" transposed, "S" strided by a slice with step 2, "R" reversed by a negative-step
  slice, "B" broadcast along axis 0 with a zero stride). The reference sees `value` upcast to float64
  (floats) or int64 (integers).
- `Raw(value)`: a NumPy array handed to the kernel as it is (for `from_numpy`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

FLOAT = ("float16", "bfloat16", "float32", "float64")     # bfloat16: checked where a backend declares it
SINT = ("int8", "int16", "int32", "int64")
INT = SINT + ("uint8",)
NUMERIC = FLOAT + INT
BOOL = ("bool",)
ALL = NUMERIC + BOOL
INTBOOL = INT + BOOL
# complex dtypes: a record lists them only where the kernel must take complex arrays; a backend that
# does not declare them is not checked on them
COMPLEX = ("complex64", "complex128")
REAL_OF = {"complex64": "float32", "complex128": "float64"}

# (rtol, atol) per dtype; integer and bool results are compared exactly
# bfloat16 keeps 8 significant bits to float16's 11: its tolerances are float16's, about 8 times wider
TOL = {"float16": (2e-3, 1e-4), "bfloat16": (1.6e-2, 1e-3), "float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}
LOOSE = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10)}
for _c, _r in REAL_OF.items():          # complex values: each part within its float dtype's tolerance
    TOL[_c], LOOSE[_c] = TOL[_r], LOOSE[_r]
BIG = {"float16": 6.0e4, "bfloat16": 3.0e38, "float32": 3.0e38, "float64": 1.0e300}
TINY = {"float16": 6.1e-5, "bfloat16": 1.2e-38, "float32": 1.2e-38, "float64": 2.3e-308}


class A:
    """An array argument: `value` (a NumPy array of the sample's dtype) built in `layout`."""
    __slots__ = ("value", "layout")

    def __init__(self, value, layout="C"):
        v = np.asarray(value)
        if v.ndim == 0 or v.size == 0 or (layout == "T" and v.ndim < 2):
            layout = "C"
        if layout == "B":           # the backend array is row 0 broadcast: so is the reference's
            v = np.ascontiguousarray(np.broadcast_to(v[:1], v.shape))
        self.value = v
        self.layout = layout

    def __repr__(self):
        v = self.value
        names = {"T": " transposed", "S": " strided", "R": " reversed", "B": " broadcast"}
        lay = names.get(self.layout, "")
        return f"{v.dtype.name}{list(v.shape)}{lay}"


class Raw:
    """A NumPy array passed to the kernel untouched."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        c = "" if self.value.flags.c_contiguous else " non-contiguous"
        return f"numpy {self.value.dtype.name}{list(self.value.shape)}{c}"


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    desc: str = ""
    needs: tuple = ()          # dtypes (besides the record's) the backend must declare for this sample

    def describe(self):
        if self.desc:
            return self.desc
        return ", ".join(_short(a) for a in self.args) + \
            "".join(f", {k}={_short(v)}" for k, v in self.kwargs.items())


def _short(a):
    if isinstance(a, (A, Raw)):
        return repr(a)
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_short(x) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    if isinstance(a, slice):
        return f"{'' if a.start is None else a.start}:{'' if a.stop is None else a.stop}" + \
            ("" if a.step is None else f":{a.step}")
    if a is Ellipsis:
        return "..."
    if isinstance(a, float) and math.isnan(a):
        return "nan"
    return repr(a)


@dataclass
class ErrorCase:
    """Frontend inputs (tensors on the backend's device) that must raise `exc`."""
    desc: str
    fn: Callable            # fn(T) where T(data, dtype=None) makes a tensor on the device
    exc: type | tuple = RuntimeError


@dataclass
class OpRecord:
    """One backend kernel in the op database."""
    name: str
    family: str
    dtypes: tuple
    samples: Callable                      # samples(dtype, rng) -> list[Sample]
    ref: Callable | None = None            # ref(*args, **kwargs) on float64/int64 NumPy inputs
    out_dtype: Any = None                  # None: the sample dtype; a name (or tuple of names, one per
                                           # output); callable(dtype, sample) -> either
    tol: dict | None = None                # overrides TOL per dtype
    compare: Callable | None = None        # compare(actual: list, expected: list, sample, dtype) -> msg
    inplace: int | None = None             # index of the argument the kernel writes (result: that arg)
    view: str | None = None                # "write": writes through the result reach arg 0;
                                           # "read": writes to arg 0 show in the result; "copy": neither
    view_samples: Callable | None = None   # (dtype, rng) -> samples for the view check (default: samples)
    supports_out: bool = False             # pointwise kernels accept out=
    errors: list = field(default_factory=list)
    random: Callable | None = None         # random kernels: check(K, dtype) -> None, raises on failure
    multi_inplace: Callable | None = None  # kernels writing several arguments in place (adam_step):
                                           # check(K, dtype) -> None, raises on failure
    fallback_raises: Callable | None = None  # kernels without a real decomposition: call(K) calls the
                                           # kernel, which must raise NotImplementedError when decomposed
    doc: str = ""

    @property
    def kind(self):
        from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED
        return "required" if self.name in REQUIRED else "optional" if self.name in OPTIONAL else "extra"

    def result_dtypes(self, dtype, sample):
        od = self.out_dtype
        if od is None:
            return dtype
        return od(dtype, sample) if callable(od) else od

    def tolerance(self, dtype):
        if self.tol and dtype in self.tol:
            return self.tol[dtype]
        return TOL.get(dtype, (0.0, 0.0))


RECORDS: dict[str, OpRecord] = {}


def register(rec: OpRecord) -> OpRecord:
    if rec.name in RECORDS:
        raise ValueError(f"two op records for kernel {rec.name!r}")
    RECORDS[rec.name] = rec
    return rec


# -- values ----------------------------------------------------------------------------------------
def rng_for(name: str, dtype: str) -> np.random.Generator:
    """A generator seeded from the record and dtype names: samples are the same on every run."""
    seed = sum((i + 1) * ord(c) for i, c in enumerate(f"{name}/{dtype}"))
    return np.random.default_rng(seed)


def values(rng, dtype, shape, lo=None, hi=None):
    """Random values of `dtype` in [lo, hi] (defaults: floats in [-5, 5], integers in [-20, 20] clipped
    to the dtype's range, bools 50/50)."""
    shape = tuple(shape)
    if dtype in COMPLEX:        # real and imaginary parts each in [lo, hi]
        return _make_complex(values(rng, REAL_OF[dtype], shape, lo, hi), values(rng, REAL_OF[dtype], shape, lo, hi),
                             dtype)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in FLOAT:
        lo = -5.0 if lo is None else lo
        hi = 5.0 if hi is None else hi
        return np.asarray(rng.uniform(lo, hi, shape)).astype(dtype)
    info = np.iinfo(dtype)
    lo = max(info.min, -20 if lo is None else lo)
    hi = min(info.max, 20 if hi is None else hi)
    return np.asarray(rng.integers(lo, hi + 1, shape)).astype(dtype)


def edges(dtype):
    """Edge values of `dtype` as a 1-d array: +-0, +-1, inf, nan, the largest and tiny magnitudes for
    floats; 0, +-1 and the extremes for integers; both bools."""
    if dtype == "bool":
        return np.array([True, False, True, False])
    if dtype in COMPLEX:
        # the real edge values but the largest and tiniest magnitudes (where single-precision complex
        # arithmetic over- and underflows where the float64 reference does not), with imaginary
        # parts 0, 1, -2.5, inf and nan
        re = edges(REAL_OF[dtype])
        re = re[(np.abs(re) < BIG[REAL_OF[dtype]]) & ((np.abs(re) > TINY[REAL_OF[dtype]]) | (re == 0))
                | np.isnan(re) | np.isinf(re)]
        im = np.array([0.0, 1.0, -2.5, math.inf, math.nan], dtype=re.dtype)
        a, b = np.meshgrid(re, im, indexing="ij")
        return _make_complex(a.reshape(-1), b.reshape(-1), dtype)
    if dtype in FLOAT:
        big, tiny = BIG[dtype], TINY[dtype]
        return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, math.nan, big, -big,
                         tiny, -tiny], dtype=dtype)
    info = np.iinfo(dtype)
    vals = [0, 1, 2, info.max, info.max - 1, info.min, info.min + 1, 7]
    if info.min < 0:
        vals += [-1, -2, -7, -3]
    return np.array(vals, dtype=dtype)


def _make_complex(re, im, dtype):
    out = np.empty(np.shape(re), dtype=dtype)
    out.real, out.imag = re, im         # (re + 1j * im would turn inf * 1j into nan + inf j)
    return out


def to_ref(v):
    """A sample value as the reference sees it: float64 for floats, int64 for integers."""
    if isinstance(v, A):
        v = v.value
    elif isinstance(v, Raw):
        v = v.value
    else:
        return v
    if v.dtype.kind == "f" or v.dtype.name == "bfloat16":
        return v.astype(np.float64)
    if v.dtype.kind == "c":
        return v.astype(np.complex128)
    if v.dtype.kind in "iu":
        return v.astype(np.int64)
    return v.copy()


def ref_args(args):
    out = []
    for a in args:
        if isinstance(a, (A, Raw)):
            out.append(to_ref(a))
        elif isinstance(a, tuple):
            out.append(tuple(ref_args(a)))
        elif isinstance(a, list):
            out.append(list(ref_args(a)))
        else:
            out.append(a)
    return out


def scalar(dtype, v=None):
    """A Python scalar of dtype's category (float, int or bool)."""
    if dtype == "bool":
        return True if v is None else bool(v)
    if dtype in FLOAT:
        return 2.5 if v is None else float(v)
    if dtype in COMPLEX:
        return complex(2.5, -1.5) if v is None else complex(v)
    return 3 if v is None else int(v)


# -- standard sample sets ---------------------------------------------------------------------------
def unary_samples(dtype, rng, lo=None, hi=None, edge=True, edge_filter=None):
    """Shapes 0-d, empty, 1-d, 3-d; transposed, strided, reversed and broadcast layouts; edge values."""
    v = lambda *s: values(rng, dtype, s, lo, hi)  # noqa: E731
    row = values(rng, dtype, (1, 3), lo, hi)
    out = [
        Sample((A(v()),)),
        Sample((A(v(0)),)),
        Sample((A(v(2, 0, 3)),)),
        Sample((A(v(7)),)),
        Sample((A(v(2, 3, 4)),)),
        Sample((A(v(3, 4), "T"),)),
        Sample((A(v(2, 5), "S"),)),
        Sample((A(v(6), "R"),)),
        Sample((A(np.repeat(row, 4, axis=0), "B"),)),
    ]
    if edge:
        e = edges(dtype)
        if edge_filter is not None:
            e = e[edge_filter(_f(e))]
        out.append(Sample((A(e),), desc=f"edge values {_fmt_vals(e)}"))
    return out


def binary_samples(dtype, rng, lo=None, hi=None, rlo=None, rhi=None, edge=True, pair_filter=None,
                   scalars=True):
    """Broadcasting shape pairs (incl. 0-d and empty), mixed layouts, Python scalar operands and
    every pair of edge values. `rlo`/`rhi` bound the right operand; pair_filter(a, b) -> keep mask."""
    rlo = lo if rlo is None else rlo
    rhi = hi if rhi is None else rhi
    L = lambda *s: values(rng, dtype, s, lo, hi)  # noqa: E731
    R = lambda *s: values(rng, dtype, s, rlo, rhi)  # noqa: E731
    out = [
        Sample((A(L()), A(R()))),
        Sample((A(L(5)), A(R()))),
        Sample((A(L()), A(R(5)))),
        Sample((A(L(3, 4), "T"), A(R(3, 4), "S"))),
        Sample((A(L(2, 3)), A(R(3)))),
        Sample((A(L(2, 1, 4)), A(R(3, 1)))),
        Sample((A(L(0, 3)), A(R(3)))),
        Sample((A(L(4, 1), "R"), A(R(1, 5)))),
        Sample((A(np.repeat(L(1, 3), 2, axis=0), "B"), A(R(2, 3), "T"))),
    ]
    if scalars:
        sv = _scalar_in(dtype, rng, lo, hi)
        rv = _scalar_in(dtype, rng, rlo, rhi)
        out.append(Sample((A(L(2, 3)), rv)))
        out.append(Sample((sv, A(R(4)))))
    if edge:
        e = edges(dtype)
        a, b = np.meshgrid(e, e, indexing="ij")
        a, b = a.reshape(-1), b.reshape(-1)
        if pair_filter is not None:
            keep = pair_filter(_f(a), _f(b))
            a, b = a[keep], b[keep]
        out.append(Sample((A(a), A(b)), desc=f"every pair of edge values ({a.size} pairs)"))
    return out


def _f(a):
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a.astype(np.float64) if a.dtype != np.bool_ else a


def _scalar_in(dtype, rng, lo, hi):
    v = values(rng, dtype, (), lo, hi)
    return scalar(dtype, v.item())


def _fmt_vals(e):
    return "[" + ", ".join(str(x) for x in e.tolist()[:16]) + (", ..." if e.size > 16 else "") + "]"


def reduction_samples(dtype, rng, lo=None, hi=None, empty=True, axes_none=True, edge=True):
    """(x, axes, keepdims) samples: all axes, one, several, 0-d input, non-contiguous layouts, empty."""
    v = lambda *s: values(rng, dtype, s, lo, hi)  # noqa: E731
    out = [
        Sample((A(v(7)), None, False)),
        Sample((A(v()), None, False)),
        Sample((A(v(3, 4)), (0,), False)),
        Sample((A(v(3, 4), "T"), (1,), True)),
        Sample((A(v(2, 3, 4)), (0, 2), False)),
        Sample((A(v(2, 3, 4), "S"), (1,), True)),
        Sample((A(v(4, 5), "R"), None, True)),
        Sample((A(v(2, 3, 4)), (0, 1, 2), False)),
    ]
    if not axes_none:
        out = [s for s in out if s.args[1] is not None]
    if empty:
        out += [Sample((A(v(0, 3)), (0,), False)), Sample((A(v(0)), None, False))]
    if edge:
        e = edges(dtype)
        out.append(Sample((A(e.reshape(2, -1)), (1,), False), desc=f"edge values {_fmt_vals(e)}, axis 1"))
    return out
