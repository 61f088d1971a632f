"""A CuPy stand-in built on NumPy, for testing the CUDA backend's *logic* on a machine without a GPU.

This is NOT CuPy: tests that use it prove nothing about CuPy, CUDA or a GPU. They prove that the
backend's own code (kernels.py, conv.py, norm.py, the xp lowerings of fused.py, the device plumbing
of __init__.py) is right, given an array module that behaves like CuPy in the ways that matter:

- device arrays are not numpy.ndarray, and implicit conversion to NumPy (np.asarray, __array__)
  raises TypeError, as in CuPy: only asnumpy() / .get() copy to the host;
- array functions refuse NumPy arrays, ufuncs also refuse lists (CuPy's TypeError), index keys and
  assigned values must not be NumPy arrays (a silent host-to-device copy in CuPy);
- results are always arrays: reductions give 0-d arrays, and so does indexing one element;
- every array belongs to the device that was current when it was made; anything that computes
  (not views) refuses arrays of another device, like CuPy's "Array device must be same as the
  current device"; cuda.Device(i) is a context manager switching the current device;
- cupyx.scatter_add takes float32, int32, uint32, uint64 only (CuPy before float16/float64 support;
  `reset(scatter_add=...)` changes it), scatter_max int32, float32, float64, uint32, uint64;
- linalg.inv / solve return NaN for a singular matrix unless cupyx.errstate(linalg="raise");
- sign maps NaN to 0, as CuPy's does;
- cupyx.scipy.sparse has coo_matrix (over SciPy) with CuPy's data dtypes, tocsr() and csr @ dense;
- there is no ElementwiseKernel / ReductionKernel, so the backend runs its xp lowerings.

`reset(devices=2)` restores the default state (two devices, device 0 current).
"""
from __future__ import annotations

import builtins as _builtins
import contextlib
import sys
import types

import numpy as _np

__version__ = "0.0+numpy-standin"

_ATOMIC_ADD = ("float32", "int32", "uint32", "uint64")
_ATOMIC_MAX = ("int32", "float32", "float64", "uint32", "uint64")


class _State:
    def __init__(self, devices=2, scatter_add=_ATOMIC_ADD, driver_error=None):
        self.devices = devices
        self.current = 0
        self.stack = []
        self.linalg = "ignore"
        self.syncs = 0
        self.freed = 0
        self.scatter_add = tuple(scatter_add)
        self.driver_error = driver_error
        self.compute_type = {}
        self.device_errors = 0
        self.d2h = 0                 # device-to-host copies (asnumpy, .get(), scalar conversions)
        self.h2d = 0                 # host-to-device copies (asarray of host data)


_state = _State()


def reset(devices=2, scatter_add=_ATOMIC_ADD, driver_error=None):
    """Back to a fresh state: `devices` devices, device 0 current; driver_error (a message) makes
    getDeviceCount raise CUDARuntimeError."""
    global _state
    _state = _State(devices, scatter_add, driver_error)


def state():
    return _state


# -- arrays ------------------------------------------------------------------------------------------
def _device_error(arr):
    _state.device_errors += 1
    raise ValueError(f"Array device must be same as the current device: array device = {arr._dev} while "
                     f"current = {_state.current}")


def _un(x, ufunc=False):
    """The NumPy array behind x (checking its device), refusing host arrays as CuPy does."""
    if isinstance(x, ndarray):
        if x._dev != _state.current:
            _device_error(x)
        return x._a
    if isinstance(x, _np.ndarray):
        raise TypeError(f"Unsupported type {type(x)} (a NumPy array where a device array is expected)")
    if isinstance(x, (list, tuple)):
        if ufunc:
            raise TypeError(f"Unsupported type {type(x)}")
        return type(x)(_un(v) for v in x)
    return x


def _view_of(x):
    """The NumPy array behind a device array for a view (no device check: views launch nothing)."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, _np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}")
    return x


def _wrap(r, dev=None):
    if isinstance(r, _np.ndarray):
        return ndarray(r, dev)
    if isinstance(r, _np.generic):
        return ndarray(_np.asarray(r), dev)
    if isinstance(r, tuple):
        return tuple(_wrap(v, dev) for v in r)
    if isinstance(r, list):
        return [_wrap(v, dev) for v in r]
    return r


def _key(key, view):
    """An index key with device arrays unwrapped; NumPy arrays refused."""
    parts = key if isinstance(key, tuple) else (key,)
    advanced = _builtins.any(isinstance(k, (ndarray, list)) for k in parts)
    out = tuple(_un(k) if isinstance(k, ndarray) else _reject_host(k) for k in parts)
    return (out if isinstance(key, tuple) else out[0]), advanced


def _reject_host(k):
    if isinstance(k, _np.ndarray):
        raise TypeError("a NumPy array in an index key: CuPy copies it to the device on every use; "
                        "make it a device array first")
    return k


class _Data:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class ndarray:
    """A device array: a NumPy array and the index of the device it lives on."""
    __slots__ = ("_a", "_dev")
    __array_ufunc__ = None           # NumPy operators defer to ours (np.float32(2) * x -> x.__rmul__)
    __hash__ = None

    def __init__(self, a, dev=None):
        self._a = a
        self._dev = _state.current if dev is None else dev

    # attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    device = property(lambda self: cuda.Device(self._dev))
    data = property(lambda self: _Data(self._a.ctypes.data))
    T = property(lambda self: ndarray(self._a.T, self._dev))

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
                        "construct a NumPy array explicitly.")

    def __repr__(self):
        return f"fake_cupy.ndarray({self._a!r}, device={self._dev})"

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        for i in range(len(self._a)):
            yield ndarray(self._a[i, ...], self._dev)

    def __bool__(self):
        _state.d2h += 1
        return bool(self._a)

    def __int__(self):
        _state.d2h += 1
        return int(self._a)

    def __float__(self):
        _state.d2h += 1
        return float(self._a)

    def __index__(self):
        _state.d2h += 1
        return self._a.__index__()

    # host transfer
    def get(self):
        _state.d2h += 1
        return _np.array(self._a, copy=True)

    def set(self, host):
        if not isinstance(host, _np.ndarray):
            raise TypeError("set() takes a NumPy array")
        self._a[...] = host.reshape(self._a.shape)

    def item(self):
        _state.d2h += 1
        return self._a.item()

    def tolist(self):
        _state.d2h += 1
        return self._a.tolist()

    # indexing
    def __getitem__(self, key):
        k, advanced = _key(key, True)
        if advanced and self._dev != _state.current:
            _device_error(self)
        r = self._a[k]
        return ndarray(r if isinstance(r, _np.ndarray) else _np.asarray(r), self._dev)

    def __setitem__(self, key, value):
        if self._dev != _state.current:
            _device_error(self)
        k, _ = _key(key, False)
        with _np.errstate(all="ignore"):
            self._a[k] = _un(value)

    # views (no device check)
    def reshape(self, *shape, order="C"):
        return ndarray(self._a.reshape(*shape, order=order), self._dev)

    def transpose(self, *axes):
        return ndarray(self._a.transpose(*axes), self._dev)

    def swapaxes(self, a, b):
        return ndarray(self._a.swapaxes(a, b), self._dev)

    def view(self, dtype=None):
        return ndarray(self._a.view(dtype), self._dev)

    def squeeze(self, axis=None):
        return ndarray(self._a.squeeze(axis), self._dev)

    # the parts of a complex array are views, as in CuPy
    real = property(lambda self: ndarray(self._a.real, self._dev))
    imag = property(lambda self: ndarray(self._a.imag, self._dev))

    # computing methods
    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        meth = getattr(_np.ndarray, name, None)
        if meth is None or not callable(meth):
            raise AttributeError(f"'fake_cupy.ndarray' object has no attribute {name!r}")

        def call(*args, **kwargs):
            a = _un(self)
            with _np.errstate(all="ignore"):
                r = getattr(a, name)(*_un(args), **{k: _un(v) for k, v in kwargs.items()})
            return _wrap(r)
        return call


def _binop(f, reflected=False):
    def op(self, other):
        if isinstance(other, _np.ndarray) and not isinstance(other, ndarray):
            return NotImplemented
        return f(other, self) if reflected else f(self, other)
    return op


def _iop(f):
    def op(self, other):
        f(self, other, out=self)
        return self
    return op


# -- ufuncs and functions ----------------------------------------------------------------------------
def _ufunc(name, uf):
    def call(*args, out=None, **kwargs):
        a = [_un(x, ufunc=True) for x in args]
        kw = {k: _un(v) for k, v in kwargs.items()}
        with _np.errstate(all="ignore"):
            if out is not None:
                uf(*a, out=_un(out), **kw)
                return out
            return _wrap(uf(*a, **kw))
    call.__name__ = name
    return call


_g = globals()
for _n in dir(_np):
    _f = getattr(_np, _n)
    if isinstance(_f, _np.ufunc):
        _g[_n] = _ufunc(_n, _f)


def _cupy_sign(x, out=None):
    """CuPy's sign: NaN -> 0 (NumPy keeps NaN)."""
    r = _np.sign(x, out=out) if out is not None else _np.asarray(_np.sign(x))
    if r.dtype.kind == "f":
        _np.copyto(r, 0, where=r != r)
    return r


sign = _ufunc("sign", _cupy_sign)


def _fn(name, f=None):
    f = f or getattr(_np, name)

    def call(*args, **kwargs):
        a = _un(args)
        kw = {k: _un(v) for k, v in kwargs.items()}
        with _np.errstate(all="ignore"):
            return _wrap(f(*a, **kw))
    call.__name__ = name
    return call


def _viewfn(name):
    f = getattr(_np, name)

    def call(x, *args, **kwargs):
        if not isinstance(x, ndarray):
            raise TypeError(f"Unsupported type {type(x)}")
        return ndarray(f(x._a, *args, **kwargs), x._dev)
    call.__name__ = name
    return call


for _n in ("sum", "prod", "amax", "amin", "max", "min", "any", "all", "argmax", "argmin", "cumsum", "cumprod",
           "where", "concatenate", "stack", "take", "take_along_axis", "nonzero", "matmul",
           "clip", "mean", "var", "repeat", "tile", "dot", "unique", "count_nonzero", "isclose", "allclose",
           "array_equal", "zeros_like", "ones_like", "empty_like", "full_like", "pad", "einsum"):
    _g[_n] = _fn(_n)
# CuPy sorts are always stable (thrust/CUB radix sort); `kind` may only be None or "stable"
def _stable(name):
    f = getattr(_np, name)

    def call(a, axis=-1, kind=None):
        if kind not in (None, "stable"):
            raise ValueError(f"{name}: kind {kind!r} is not supported (CuPy sorts are stable)")
        return _wrap(f(_un(a), axis=axis, kind="stable"))
    call.__name__ = name
    return call


argsort, sort = _stable("argsort"), _stable("sort")

for _n in ("broadcast_to", "diagonal", "moveaxis", "transpose", "swapaxes", "squeeze", "expand_dims", "flip",
           "reshape"):
    _g[_n] = _viewfn(_n)

for _opname, _uf in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                     ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                     ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
                     ("rshift", "right_shift"), ("matmul", "matmul")):
    _f = _g[_uf]
    setattr(ndarray, f"__{_opname}__", _binop(_f))
    setattr(ndarray, f"__r{_opname}__", _binop(_f, True))
    setattr(ndarray, f"__i{_opname}__", _iop(_f) if _opname != "matmul" else _binop(_f))
for _opname, _uf in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                     ("gt", "greater"), ("ge", "greater_equal")):
    setattr(ndarray, f"__{_opname}__", _binop(_g[_uf]))
ndarray.__neg__ = lambda self: negative(self)          # noqa: F821
ndarray.__pos__ = lambda self: self.copy()
ndarray.__abs__ = lambda self: absolute(self)          # noqa: F821
ndarray.__invert__ = lambda self: invert(self)         # noqa: F821

# dtypes and constants, as in CuPy (NumPy's own objects)
for _n in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "bool_", "complex64", "complex128", "dtype", "iinfo", "finfo", "nan", "inf", "pi", "newaxis", "e"):
    _g[_n] = getattr(_np, _n)


def zeros(shape, dtype=float, order="C"):
    return ndarray(_np.zeros(shape, dtype=dtype, order=order))


def ones(shape, dtype=float):
    return ndarray(_np.ones(shape, dtype=dtype))


def empty(shape, dtype=float, order="C"):
    # CuPy's empty holds stale device memory: fill with a recognisable garbage value
    a = _np.empty(shape, dtype=dtype, order=order)
    a.fill(_np.array(7, dtype=a.dtype) if a.dtype.kind != "b" else True)
    return ndarray(a)


def full(shape, fill_value, dtype=None):
    if isinstance(fill_value, ndarray):
        fill_value = _un(fill_value)
    with _np.errstate(all="ignore"):
        return ndarray(_np.full(shape, fill_value, dtype=dtype))


def arange(start, stop=None, step=None, dtype=None):
    if stop is None:
        return ndarray(_np.arange(start, dtype=dtype))
    return ndarray(_np.arange(start, stop, 1 if step is None else step, dtype=dtype))


def eye(n, m=None, k=0, dtype=float):
    return ndarray(_np.eye(n, m, k, dtype=dtype))


def asarray(a, dtype=None, order=None):
    """To the current device: device arrays as they are (or converted), host data copied."""
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == _np.dtype(dtype) else a.astype(dtype)
    _state.h2d += 1
    return ndarray(_np.array(a, dtype=dtype, copy=True, order="C"))


array = asarray


def asnumpy(a):
    if isinstance(a, ndarray):
        _state.d2h += 1
        return _np.array(a._a, copy=True)
    return _np.asarray(a)


def ascontiguousarray(a, dtype=None):
    """Like CuPy's: a 0-d array stays 0-d (NumPy's makes it 1-d)."""
    src = _un(a)
    if src.flags.c_contiguous and (dtype is None or src.dtype == _np.dtype(dtype)):
        return a
    return ndarray(_np.array(src, dtype=dtype, order="C", copy=True))


def copyto(dst, src, casting="same_kind", where=True):
    d = _un(dst)
    with _np.errstate(all="ignore"):
        _np.copyto(d, _un(src), casting=casting, where=_un(where))


def get_array_module(*args):
    return sys.modules[__name__]


# -- linalg --------------------------------------------------------------------------------------------
def _singular(fn):
    def call(*args):
        a = [_un(x) for x in args]
        try:
            return ndarray(fn(*a))
        except _np.linalg.LinAlgError:
            if _state.linalg == "raise":
                raise _np.linalg.LinAlgError("Error reported by getrf in cuSOLVER. devInfo = 1. Please refer "
                                             "to the cuSOLVER documentation.") from None
            shape = _np.broadcast_shapes(a[0].shape[:-2], a[-1].shape[:-2]) + a[-1].shape[-2:] \
                if len(a) > 1 else a[0].shape
            return ndarray(_np.full(shape, _np.nan, dtype=a[0].dtype))
    return call


def _factor(fn):
    """A factorization: NumPy's, on device arrays (keywords passed through)."""
    def call(a, **kwargs):
        r = fn(_un(a), **kwargs)
        return tuple(ndarray(x) for x in r) if isinstance(r, tuple) else ndarray(r)
    return call


def _cholesky(a):
    """Like CuPy's: LinAlgError under errstate(linalg="raise"), NaN factors otherwise."""
    try:
        return ndarray(_np.linalg.cholesky(_un(a)))
    except _np.linalg.LinAlgError:
        if _state.linalg == "raise":
            raise _np.linalg.LinAlgError("Error reported by potrf in cuSOLVER. devInfo = 2. Please refer to the "
                                         "cuSOLVER documentation.") from None
        return ndarray(_np.full(a.shape, _np.nan, dtype=a.dtype))


linalg = types.SimpleNamespace(inv=_singular(_np.linalg.inv), solve=_singular(_np.linalg.solve),
                               cholesky=_cholesky, qr=_factor(_np.linalg.qr), eigh=_factor(_np.linalg.eigh),
                               svd=_factor(_np.linalg.svd), LinAlgError=_np.linalg.LinAlgError)


def _as_strided(x, shape=None, strides=None):
    from numpy.lib.stride_tricks import as_strided
    return ndarray(as_strided(x._a, shape, strides), x._dev)


lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=_as_strided))

# cupy.fft: the NumPy transforms on the current device's arrays (CuPy keeps single precision, as NumPy 2)
fft = types.SimpleNamespace(**{_n: _fn(_n, getattr(_np.fft, _n)) for _n in ("fftn", "ifftn", "rfftn", "irfftn")})


# -- cuda ----------------------------------------------------------------------------------------------
class CUDARuntimeError(RuntimeError):
    pass


class Device:
    def __init__(self, device=None):
        self.id = _state.current if device is None else int(device)

    def __enter__(self):
        _state.stack.append(_state.current)
        runtime.setDevice(self.id)
        return self

    def __exit__(self, *exc):
        _state.current = _state.stack.pop()
        return False

    def use(self):
        runtime.setDevice(self.id)

    def synchronize(self):
        _state.syncs += 1

    @property
    def compute_capability(self):
        return "90"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


def _device_count():
    if _state.driver_error:
        raise CUDARuntimeError(_state.driver_error)
    return _state.devices


def _set_device(i):
    if not 0 <= int(i) < _device_count():
        raise CUDARuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {i}")
    _state.current = int(i)


class _Stream:
    ptr = 0

    def synchronize(self):
        _state.syncs += 1


class _Event:
    done = True

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        pass

    def record(self, stream=None):
        pass

    def synchronize(self):
        _state.syncs += 1


runtime = types.SimpleNamespace(
    getDeviceCount=_device_count, getDevice=lambda: _state.current, setDevice=_set_device,
    deviceSynchronize=lambda: setattr(_state, "syncs", _state.syncs + 1),
    getDeviceProperties=lambda i: {"name": b"Fake CUDA Device (NumPy stand-in)", "major": 9, "minor": 0,
                                   "totalGlobalMem": 1 << 30},
    CUDARuntimeError=CUDARuntimeError)
cuda = types.SimpleNamespace(Device=Device, runtime=runtime, get_current_stream=lambda: _Stream(),
                             Event=_Event, Stream=_Stream)


class _Pool:
    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def free_all_blocks(self):
        _state.freed += 1


_pool = _Pool()


def get_default_memory_pool():
    return _pool


# -- cupy._core._routines_linalg (the cuBLAS compute type: TF32 or not) --------------------------------
_rl = types.ModuleType(__name__ + "._core._routines_linalg")
_rl.COMPUTE_TYPE_TBD, _rl.COMPUTE_TYPE_DEFAULT, _rl.COMPUTE_TYPE_TF32 = 0, 1, 7


def _set_compute_type(dtype, compute_type):
    _state.compute_type[_np.dtype(dtype).name] = compute_type


_rl.set_compute_type = _set_compute_type
_rl.get_compute_type = lambda dtype: _state.compute_type.get(_np.dtype(dtype).name, 1)
_core = types.ModuleType(__name__ + "._core")
_core._routines_linalg = _rl
sys.modules[_core.__name__] = _core
sys.modules[_rl.__name__] = _rl


# -- cupy.random: RandomState's samplers of the distribution kernels, over NumPy's PCG64 -------------------
class _RandomState:
    def __init__(self, seed=None):
        # CuPy converts the seed with a safe cast to uint64: a plain int >= 2**63 or < 0 is refused
        self._g = _np.random.Generator(_np.random.PCG64(int(_np.asarray(seed).astype(_np.uint64, casting="safe"))))

    def _draw(self, name, params, dtype):
        return ndarray(_np.asarray(getattr(self._g, name)(*[_un(p) for p in params])).astype(dtype))

    def standard_gamma(self, shape, size=None, dtype=float):
        return self._draw("standard_gamma", (shape,), dtype)

    def poisson(self, lam=1.0, size=None, dtype=int):
        return self._draw("poisson", (lam,), dtype)

    def binomial(self, n, p, size=None, dtype=int):
        return self._draw("binomial", (n, p), dtype)


random = types.SimpleNamespace(RandomState=_RandomState)


# -- cupyx ---------------------------------------------------------------------------------------------
def _scatter(op, allowed, what):
    def call(a, slices, value):
        if a.dtype.name not in allowed:
            raise TypeError(f"{what} only supports {', '.join(allowed)} as data type")
        k, _ = _key(slices, False)
        if a._dev != _state.current:
            _device_error(a)
        v = _un(value) if isinstance(value, ndarray) else value
        with _np.errstate(all="ignore"):
            op.at(a._a, k, _np.asarray(v, dtype=a.dtype))
    return call


@contextlib.contextmanager
def _errstate(linalg=None):
    prev = _state.linalg
    if linalg is not None:
        _state.linalg = linalg
    try:
        yield
    finally:
        _state.linalg = prev


class _CooMatrix:
    """cupyx.scipy.sparse.coo_matrix((data, (row, col)), shape) over SciPy: CuPy's data dtypes only, device
    arrays only, a host sync for its index bounds check; tocsr() sums duplicates; csr @ dense gives a
    Fortran-ordered device array, as cuSPARSE's does."""

    def __init__(self, arg, shape):
        import scipy.sparse as sp
        data, (row, col) = arg
        if data.dtype.name not in ("bool", "float32", "float64", "complex64", "complex128"):
            raise ValueError("Only bool, float32, float64, complex64 and complex128 are supported")
        _state.d2h += 1
        self._m = sp.coo_matrix((_un(data), (_un(row), _un(col))), shape=shape)
        self.shape = self._m.shape

    def tocsr(self):
        out = object.__new__(_CooMatrix)
        out._m, out.shape = self._m.tocsr(), self.shape
        return out

    def __matmul__(self, other):
        if not isinstance(other, ndarray):
            raise TypeError(f"Unsupported type {type(other)}")
        return ndarray(_np.asfortranarray(self._m @ _un(other)))


cupyx = types.SimpleNamespace(
    scatter_add=lambda a, s, v: _scatter(_np.add, _state.scatter_add, "scatter_add")(a, s, v),
    scatter_max=_scatter(_np.maximum, _ATOMIC_MAX, "scatter_max"),
    errstate=_errstate, scipy=types.SimpleNamespace(sparse=types.SimpleNamespace(coo_matrix=_CooMatrix)))


def modules():
    """(xp, cupyx) for CudaBackend(modules=...)."""
    return sys.modules[__name__], cupyx
