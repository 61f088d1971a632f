"""The backend SPI: what a compute or communication backend is, and the kernels it provides.

A compute backend serves one device type and hands the frontend a *kernel table*
`{primitive name: callable}` built once. The frontend owns shapes, broadcasting
validation, dtype promotion, views and autograd; kernels receive arrays of the
backend's own array type that already have the right dtype.

Conventions for every kernel (the conformance suite checks them):
- `dtype` arguments are canonical names ("float32", "int64", "bool", ...).
- Arrays expose `.shape` (a tuple of ints) and `.dtype` whose `.name` is the canonical name. Kernels return arrays, never host
  scalars: a reduction to one value returns a 0-d array.
- Binary kernels take two operands of the same dtype, each an array or a Python
  scalar, whose shapes the frontend has checked to broadcast (NumPy rules); they
  return the broadcast result in that dtype (comparisons and logical ops: bool).
  Unary and binary kernels accept `out=` (an array of the result's shape and dtype).
- Views: `reshape` (when the layout allows), `permute`, `broadcast_to`, `slice`
  and `diagonal` return arrays that alias their input's memory.
- Indices handed to kernels are int64 arrays already checked to be in range and
  made non-negative by the frontend.
- Complex dtypes ("complex64", "complex128") reach only a backend that lists them in `dtypes`:
  its pointwise, reduction, movement, indexing and matmul kernels then take complex arrays too
  (`abs` returns the magnitudes in the matching float dtype), and the kernels of
  optional_complex (parts, conj, real <-> complex views) and optional_fft apply.
"""
from __future__ import annotations

import contextlib

# Version 2 shrank the required set from 82 kernels to the 40 of REQUIRED_NAMES; the other 42
# became optional, with decompositions into those 40. A backend written for version 1 still works:
# its extra kernels are native optional ones.
API_VERSION = 2

# the pointwise kernels of version 1 (the built-in backends implement them all natively)
UNARY = ("neg", "abs", "sign", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "floor", "ceil",
         "round", "trunc", "erf", "logical_not", "bitwise_not", "isnan")
BINARY = ("add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum",
          "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")

# Every kernel version 1 required, with its semantics.
_V1_SPECS: dict[str, str] = {
    # creation and transfer
    "from_numpy": "from_numpy(a: numpy.ndarray) -> array with the same values and dtype (may share memory)",
    "to_numpy": "to_numpy(x) -> numpy.ndarray with the same values (may share memory)",
    "full": "full(shape: tuple, value, dtype) -> new array filled with value",
    "arange": "arange(start, stop, step, dtype) -> 1-d array like numpy.arange",
    "astype": "astype(x, dtype) -> new array converted to dtype",
    "copy": "copy(x) -> new C-contiguous array with x's values",
    "assign": "assign(dst, src) -> None; writes src (array or scalar, broadcast to dst's shape) into dst",
    # random (generator state is opaque to the frontend)
    "rng_new": "rng_new(seed: int) -> a generator state",
    "uniform": "uniform(state, shape, dtype) -> floats in [0, 1)",
    "normal": "normal(state, shape, dtype) -> standard normal floats",
    # pointwise
    **{n: f"{n}(x, out=None) -> elementwise {n}" for n in UNARY},
    "sign": "sign(x, out=None) -> -1, 0 or +1 elementwise; 0 for NaN (PyTorch's sign, not NumPy's)",
    **{n: f"{n}(x, y, out=None) -> elementwise {n}, broadcast (NumPy rules)" for n in BINARY},
    "where": "where(cond: bool array, x, y) -> elements of x where cond else y, broadcast",
    # reductions and scans; axes is a tuple of non-negative ints or None for all
    "sum": "sum(x, axes, keepdims, dtype=None) -> sums (0-d array when reducing everything)",
    "prod": "prod(x, axes, keepdims, dtype=None) -> products",
    "max": "max(x, axes, keepdims) -> maxima (NaN propagates)",
    "min": "min(x, axes, keepdims) -> minima (NaN propagates)",
    "any": "any(x, axes, keepdims) -> bool array",
    "all": "all(x, axes, keepdims) -> bool array",
    "argmax": "argmax(x, axis, keepdims) -> int64 index of the first maximum (axis None: flat index)",
    "argmin": "argmin(x, axis, keepdims) -> int64 index of the first minimum",
    "cumsum": "cumsum(x, axis) -> inclusive prefix sums in x's dtype",
    "cumprod": "cumprod(x, axis) -> inclusive prefix products in x's dtype",
    "argsort": "argsort(x, axis, descending, stable) -> int64 indices that sort x along axis (NaN last)",
    # movement and views
    "reshape": "reshape(x, shape) -> view when the layout allows, else a copy",
    "permute": "permute(x, axes) -> view with axes reordered",
    "broadcast_to": "broadcast_to(x, shape) -> read-only broadcast view",
    "slice": "slice(x, key) -> view; key is a tuple of ints, slices (any step), None and Ellipsis",
    "diagonal": "diagonal(x, offset, axis1, axis2) -> view of the diagonal, placed as the last axis",
    "flip": "flip(x, axes) -> x reversed along axes (view or copy)",
    "concat": "concat(xs: list, axis) -> new array joining same-dtype arrays",
    "pad": "pad(x, widths: tuple of (before, after) per axis, mode: constant|reflect|replicate, value) -> new array",
    # indexing
    "index": "index(x, key) -> NumPy advanced indexing; key mixes slices, ints, None, Ellipsis, int64 and bool arrays",
    "index_put": "index_put(x, key, values, accumulate) -> None; x[key] = values, or += with duplicates summed",
    "gather": "gather(x, idx, axis) -> like numpy.take_along_axis",
    "scatter": "scatter(x, idx, src, axis) -> None; x[..idx..] = src along axis (last write wins)",
    "scatter_add": "scatter_add(x, idx, src, axis) -> None; like scatter but duplicate indices are summed",
    "nonzero": "nonzero(x) -> tuple of int64 arrays, one per axis, in row-major order",
    # linear algebra
    "matmul": "matmul(a, b) -> numpy.matmul semantics (1-d, 2-d, batched with broadcast batch dims)",
    "inv": "inv(a) -> inverse of (a batch of) square matrices; raises on a singular matrix",
    "solve": "solve(a, b) -> x with a @ x = b for (batches of) square a and matrix b",
}
REQUIRED_V1 = tuple(_V1_SPECS)

# The required set of version 2: what a backend must write before it runs anything.
REQUIRED_NAMES = (
    "from_numpy", "to_numpy", "full", "arange", "astype", "copy", "assign",     # creation and transfer
    "rng_new", "uniform", "normal",                                            # random
    "neg", "exp", "log", "sin", "cos", "floor", "erf",                         # unary
    "add", "mul", "div", "floor_divide", "remainder", "pow", "eq", "lt", "bitwise_and",   # binary
    "where",
    "sum", "max", "min", "argsort",                                            # reductions
    "reshape", "permute", "broadcast_to", "slice", "diagonal", "concat",       # movement and views
    "index", "index_put",                                                      # indexing
    "matmul",                                                                  # linear algebra
)
# Demoted kernels whose decompositions live in decompositions_structural.py (reductions, scans,
# movement, indexing, linalg); one stays required until that module defines it.
STRUCTURAL = ("prod", "any", "all", "argmax", "argmin", "cumsum", "cumprod", "flip", "pad", "gather",
              "scatter", "scatter_add", "nonzero", "inv", "solve")


def _structural_pending() -> tuple:
    import importlib
    try:
        mod = importlib.import_module(f"{__package__}.decompositions_structural")
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.decompositions_structural":
            raise
        return STRUCTURAL
    return tuple(n for n in STRUCTURAL if not callable(getattr(mod, n, None)))


REQUIRED: dict[str, str] = {n: _V1_SPECS[n] for n in REQUIRED_NAMES}

# Optional kernels: a backend may provide them natively; otherwise the decomposition
# in tensorplug.dispatch.decompositions (written in required primitives) is used. The
# decompositions of rng_get_state / rng_set_state cannot be written in primitives: they
# raise NotImplementedError (see NO_FALLBACK).
OPTIONAL: dict[str, str] = {
    # version 1's required kernels beyond the 40 (decompositions: decompositions.py, and
    # decompositions_structural.py for STRUCTURAL)
    **{n: d for n, d in _V1_SPECS.items() if n not in REQUIRED},
    "sigmoid": "sigmoid(x) -> 1 / (1 + exp(-x))",
    "log1p": "log1p(x) -> log(1 + x), accurate for small x",
    "expm1": "expm1(x) -> exp(x) - 1, accurate for small x",
    "sinh": "sinh(x)", "cosh": "cosh(x)",
    "asin": "asin(x)", "acos": "acos(x)", "atan": "atan(x)",
    "isinf": "isinf(x) -> bool array", "isfinite": "isfinite(x) -> bool array",
    "clip": "clip(x, lo, hi) -> x limited to [lo, hi]; lo or hi may be None",
    "softmax": "softmax(x, axis) -> exp(x - max) / sum, along axis",
    "log_softmax": "log_softmax(x, axis) -> x - max - log(sum(exp(x - max))), along axis",
    "randint": "randint(state, low, high, shape, dtype) -> integers uniform in [low, high)",
    "randperm": "randperm(state, n, dtype) -> a random permutation of range(n)",
    "bernoulli": "bernoulli(state, p: float array) -> 0/1 in p's dtype, 1 with probability p",
    # generator state export/import (no decomposition exists: without them, get_state/set_state raise)
    "rng_get_state": "rng_get_state(state) -> bytes: a self-describing serialisation of the generator state "
                     "(it must not change the state)",
    "rng_set_state": "rng_set_state(data: bytes) -> a new generator state equal to the one rng_get_state "
                     "serialised (raises ValueError for bytes it cannot read)",
}

# optional kernels whose decomposition only raises NotImplementedError
NO_FALLBACK = frozenset(("rng_get_state", "rng_set_state"))

# families of optional kernels kept in their own modules (conv/pool, normalization/embedding,
# complex parts and views, FFT, sparse COO, random distributions, matrix factorizations)
OPTIONAL_FAMILIES = ("optional_conv", "optional_norm", "optional_complex", "optional_fft", "optional_sparse",
                     "optional_random", "optional_vision", "optional_linalg",
                     "optional_transformer", "optional_rnn", "optional_attention", "optional_loss",
                     "optional_optim")


def _merge_families():
    import importlib
    for fam in OPTIONAL_FAMILIES:
        OPTIONAL.update(importlib.import_module(f"{__package__}.{fam}").OPTIONAL)


_merge_families()


def _keep_pending_required():
    # runs last: decompositions_structural may import this module
    for n in _structural_pending():
        REQUIRED[n] = OPTIONAL.pop(n)


_keep_pending_required()


class Backend:
    """Base class of compute backends. Subclasses set the attributes and `native_kernels`."""

    name: str = "?"
    device_type: str = "?"
    api_version: int = API_VERSION
    version: str = "0"
    priority: int = 0
    indexed: bool = True          # devices carry an index ("cuda:0"); False for a single device ("cpu")
    dtypes: frozenset = frozenset(("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                   "uint8", "bool"))
    kind = "compute"
    _kernels = None
    _native = None

    def is_available(self) -> tuple[bool, str]:
        """(True, "") when usable here, else (False, the reason)."""
        return True, ""

    def native_kernels(self) -> dict:
        """The kernels this backend implements itself: {name: callable}."""
        raise NotImplementedError

    def device_count(self) -> int:
        return 1

    def device_context(self, index):
        """A context manager making device `index` current (for creation kernels)."""
        return contextlib.nullcontext()

    @property
    def kernels(self) -> dict:
        """The full kernel table: native kernels plus decompositions for missing optional ones."""
        if self._kernels is None:
            from .decompositions import complete_table
            self._native = dict(self.native_kernels())
            table = complete_table(self._native)
            table["__backend__"] = self          # tensors hold the table; this finds the backend
            table["__check__"] = None            # kernel_check's per-table checker, when installed
            self._kernels = table
        return self._kernels

    def kernels_for(self, index) -> dict:
        """The kernel table for device `index`. Each device has its own table object, so the
        frontend's `a._k is b._k` test means "same backend and same device"."""
        if not index:
            return self.kernels
        tables = self.__dict__.setdefault("_device_tables", {})
        table = tables.get(index)
        if table is None:
            table = tables[index] = self.device_kernels(index)
            table.setdefault("__check__", None)
        return table

    def device_kernels(self, index) -> dict:
        """Build the table for device `index` > 0. Default: the same kernels in a new table;
        a multi-device backend may bind its kernels to the device here."""
        return dict(self.kernels)

    def fuse_pointwise(self, program):
        """Optional compiler capability: a callable(*arrays) -> array computing a PointwiseProgram
        (core/compiler/fusion.py) in one kernel, or None (the default: compiled tapes then run the
        program's kernels one by one)."""
        return None

    def kernel_status(self) -> dict:
        """{kernel name: "native" | "decomposed" | "missing"} over every known kernel."""
        table = self.kernels
        status = {}
        for name in (*REQUIRED, *OPTIONAL):
            status[name] = ("native" if name in self._native else
                            "decomposed" if name in table else "missing")
        return status

    def missing_required(self) -> list[str]:
        return [n for n in REQUIRED if n not in self.kernels]

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r} device={self.device_type!r}>"


class CommunicationBackend:
    """Base class of communication backends (collectives on backend arrays)."""

    name: str = "?"
    api_version: int = API_VERSION
    version: str = "0"
    priority: int = 0
    kind = "communication"
    device_type = "-"
    # the interface each collective follows is described in backends/mpi_dist/backend.py
    COLLECTIVES = ("send", "recv", "isend", "irecv", "all_reduce", "broadcast", "reduce",
                   "all_gather", "all_gather_into", "gather", "scatter", "reduce_scatter", "barrier",
                   "all_to_all", "all_to_all_single")

    def is_available(self) -> tuple[bool, str]:
        return True, ""

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"
