"""Creation and transfer: tensor, from_numpy, zeros/ones/full/empty/eye/arange/linspace,
*_like, the legacy constructors (FloatTensor(5, 7, 3), LongTensor([0, 2, 4])), and
to / cpu / cuda / clone / type conversions."""
from __future__ import annotations

import math
import numbers
import sys

import numpy as np

from .. import dtypes as _dt
from ..device import _default as _default_device, as_device, device as Device
from ..dispatch.registry import registry
from ._core import Tensor, _gstate, _make, cast_grad, record
from ._limits import check_fill, check_shape, out_of_memory

_CPU = Device("cpu")


def resolve_device(device):
    """(kernel table, device object) for a device argument (None: the default device, normally cpu;
    an int: that index of the current accelerator)."""
    if device is None:
        device = _default_device[0]         # set_default_device / `with device(...)`
    if device.__class__ is Device:
        dev = device
    else:
        dev = as_device(device)
    backend = registry.backend_for(dev.type)
    if getattr(backend, "indexed", True):
        if dev.index is None:
            dev = Device(dev.type, 0)
        n = backend.device_count()
        if dev.index >= n:
            raise RuntimeError(f"device {dev} is out of range: backend {backend.name!r} has {n} "
                               f"{dev.type} device(s)")
    elif dev.index is not None:
        if dev.index != 0:
            raise RuntimeError(f"device type {dev.type!r} has a single device; got {dev}")
        dev = Device(dev.type)
    return backend.kernels_for(dev.index), dev


def check_dtype(k, dt):
    """Raise unless the backend of kernel table k serves dt (bfloat16 only where a backend declares it)."""
    if dt in _dt.NEED_DECLARING:
        b = k["__backend__"]
        if dt.name not in b.dtypes:
            raise TypeError(f"{dt.name} is not supported on the {b.name!r} backend")


def _host_cast(arr: np.ndarray, dt):
    """arr as dtype dt; to bfloat16 through float32, as PyTorch converts (a float64 or a wide integer
    rounds to float32 first: 1 + 2**-8 + 2**-30 becomes 1.0, not 1.0078125)."""
    if dt is _dt.bfloat16 and arr.dtype.kind in "fiu" and arr.dtype.itemsize > 2:
        arr = arr.astype(np.float32)
    return arr.astype(dt.name)


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__} ({s!r})")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad = True
    return t


_NUMPY_DTYPES = {}


def _is_numpy_dtype(npdt, dt) -> bool:
    """npdt is dt's NumPy dtype (a cached dtype comparison: NumPy's dtype.name costs ~0.5 us a read)."""
    want = _NUMPY_DTYPES.get(dt)
    if want is None:
        if dt is _dt.bfloat16:          # (ml_dtypes' type: by name, registered on first use)
            return npdt.name == dt.name
        want = _NUMPY_DTYPES[dt] = np.dtype(dt.name)
    return npdt == want


def _from_host(arr: np.ndarray, dt, device, requires_grad=False):
    k, dev = resolve_device(device)
    check_dtype(k, dt)
    if not _is_numpy_dtype(arr.dtype, dt):
        arr = _host_cast(arr, dt)
    backend = k["__backend__"]
    with backend.device_context(dev.index):
        data = k["from_numpy"](arr)
    return _finish(_make(data, dt, k, dev), requires_grad)


def _infer_dtype(arr: np.ndarray, from_python: bool):
    kind = arr.dtype.kind
    if kind == "b":
        return _dt.bool_
    if kind in "iu":
        return _dt.int64 if from_python else _dt.as_dtype(arr.dtype)
    if kind == "f" or (kind == "V" and arr.dtype.name == "bfloat16"):
        return _dt.get_default_dtype() if from_python else _dt.as_dtype(arr.dtype)
    if kind == "c":     # Python complex numbers take the default complex dtype (complex64 for float32)
        return _dt.scalar_dtype(1j) if from_python else _dt.as_dtype(arr.dtype)
    raise TypeError(f"can't convert data of NumPy dtype {arr.dtype} to a tensor; supported types: "
                    "float16/32/64, int8/16/32/64, uint8 and bool")


def _to_host_array(data, dtype=None):
    if isinstance(data, Tensor):
        return data._host(), False
    if isinstance(data, np.ndarray):
        return data, False
    if isinstance(data, np.generic):
        return np.asarray(data), False
    try:
        arr = np.array(data)
    except (ValueError, TypeError) as e:
        raise ValueError(_ragged(data) or f"can't build a tensor from {type(data).__name__}: {e}") from None
    if arr.dtype.kind == "u" or (arr.dtype == object and _all_ints(arr)):
        # Python ints past int64 (NumPy made uint64 or object): only a floating dtype holds them
        if dtype is None or not _dt.as_dtype(dtype).is_floating_point:
            raise ValueError(f"Overflow when unpacking long: {data!r} does not fit in int64")
        arr = np.array(data, dtype=np.float64)
    if arr.dtype == object:
        raise ValueError(_ragged(data) or f"can't build a tensor from {type(data).__name__}: the nested "
                         "sequences are ragged or hold non-numbers")
    if arr.dtype.kind in "US":
        raise TypeError(f"can't build a tensor from strings ({data!r})")
    return arr, True


def _all_ints(arr):
    return all(isinstance(v, int) for v in arr.reshape(-1).tolist())


def _ragged(data):
    """PyTorch's message for nested sequences of unequal lengths, or None."""
    level, dim = [data], 0
    while True:
        seqs = [x for x in level if isinstance(x, (list, tuple))]
        if not seqs:
            return None
        if len(seqs) != len(level):
            return f"sequences and numbers mixed at dim {dim}"
        lens = [len(x) for x in seqs]
        bad = [n for n in lens if n != lens[0]]
        if bad:
            return f"expected sequence of length {lens[0]} at dim {dim} (got {bad[0]})"
        level, dim = [e for x in seqs for e in x], dim + 1


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor copying `data` (a number, nested sequence, NumPy array or tensor)."""
    arr, from_python = _to_host_array(data, dtype)
    dt = _dt.as_dtype(dtype) if dtype is not None else _infer_dtype(arr, from_python)
    if device is None and isinstance(data, Tensor):
        device = data._dev
    if from_python and _is_numpy_dtype(arr.dtype, dt):
        host = arr                      # already a fresh array of Python data: no second copy
    else:
        host = np.array(arr, copy=True) if dt is _dt.bfloat16 else np.array(arr, dtype=dt.name, copy=True)
    return _from_host(host, dt, device, requires_grad)       # (_from_host rounds to bfloat16 as PyTorch)


def as_tensor(data, dtype=None, device=None):
    """Like `tensor` but shares memory with a tensor or CPU NumPy array when dtype and device allow."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, np.ndarray) and (dtype is None or _dt.as_dtype(dtype).name == data.dtype.name) \
            and as_device(device or "cpu").type == "cpu":
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """as_tensor with PyTorch's keywords; a storage gives a 1-D tensor over its bytes read as `dtype`
    (sharing them). copy=True always copies; otherwise memory is shared where as_tensor shares it."""
    st = sys.modules.get(__name__.rpartition(".ops.")[0] + ".storage")     # (only loaded if storages exist)
    if st is not None and isinstance(obj, st._Storage):
        t = st.storage_as_tensor(obj, dtype)
        t = t.to(device) if device is not None else t
        t = t.clone() if copy else t
    elif copy:
        t = tensor(obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype, device)
    return t.requires_grad_() if requires_grad else t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor over `count` elements (-1: all) of a Python buffer from byte `offset`,
    sharing its memory when the buffer is writable. A read-only buffer (bytes, a read-only mmap)
    is copied: tensorplug tensors are always writable (PyTorch shares it and warns instead)."""
    if not isinstance(dtype, _dt.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be tensorplug.dtype, not {type(dtype).__name__}")
    try:
        mv = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    n, isz = mv.nbytes, dtype.itemsize
    if n == 0 or count == 0:
        raise ValueError(f"both buffer length ({n}) and count ({count}) must not be 0")
    if offset < 0 or offset >= n:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({n} "
                         f"bytes) minus 1")
    if count < 0:
        if (n - offset) % isz:
            raise ValueError(f"buffer length ({n - offset} bytes) after offset ({offset} bytes) must be a multiple "
                             f"of element size ({isz})")
        count = (n - offset) // isz
    elif n - offset < count * isz:
        raise ValueError(f"requested buffer length ({count} * {isz} bytes) after offset ({offset} bytes) must not "
                         f"be greater than actual buffer length ({n} bytes)")
    from ..storage import numpy_dtype
    arr = np.frombuffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv, numpy_dtype(dtype), count, offset)
    if not arr.flags.writeable:
        arr = arr.copy()
    k, dev = resolve_device(_CPU)
    return _finish(_make(k["from_numpy"](arr), dtype, k, dev), requires_grad)


def from_numpy(ndarray):
    """A CPU tensor sharing memory with `ndarray` (writes through either are visible in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = _infer_dtype(ndarray, False) if ndarray.dtype.name in _dt.BY_NAME or ndarray.dtype.kind == "b" \
        else None      # (a bfloat16 array comes from ml_dtypes: PyTorch has no NumPy bfloat16 to take)
    if dt is None:
        raise TypeError(f"can't convert np.ndarray of type numpy.{ndarray.dtype}. The only supported types "
                        "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
                        "uint8, and bool.")
    k, dev = resolve_device(_CPU)           # always cpu (the default device does not apply)
    return _make(k["from_numpy"](ndarray), dt, k, dev)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None):
    size = _size((size,) if isinstance(size, int) else size)
    if dtype is None and out is not None:
        dt = out._dtype if isinstance(out, Tensor) else _dt.get_default_dtype()
    elif dtype is None:
        if isinstance(fill_value, Tensor):
            fill_value = fill_value.item()
        dt = _dt.scalar_dtype(fill_value)
    else:
        dt = _dt.as_dtype(dtype)
    r = _full(size, fill_value.item() if isinstance(fill_value, Tensor) else fill_value, dt, device,
              requires_grad)
    return r if out is None else _into_out(r, out)


def _into_out(r, out):
    """A creation function's out=: out resized to r's shape and overwritten (PyTorch's out= semantics)."""
    from .pointwise import _out
    return _out(r, out)


def _full(size, fill_value, dt, device, requires_grad):
    """full() after its arguments are read: size a tuple of ints, dt a dtype."""
    fill_value = check_fill(fill_value, dt, "full(): argument 'fill_value' (position 2)")
    check_shape(size, dt.itemsize)
    k, dev = resolve_device(device)
    check_dtype(k, dt)
    with k["__backend__"].device_context(dev.index):
        try:
            data = k["full"](size, fill_value, dt.name)
        except MemoryError:
            raise out_of_memory(size, dt.itemsize, dev) from None
    return _finish(_make(data, dt, k, dev), requires_grad)


NO_SIZE = object()       # `size=` not given


def size_arg(args, size, name, both_error=None):
    """The shape of `name(*args)` or `name(size=...)` (both: PyTorch's TypeError, `both_error` when the
    function reports it as an invalid combination). No size at all is a 0-d shape."""
    if size is NO_SIZE:
        return _size(args)
    if args:
        raise TypeError(both_error or f"{name}() got multiple values for argument 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return _size((size,))


def _filled(value, name):
    def make(*args, size=NO_SIZE, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False):
        dt = _dt.as_dtype(dtype) if dtype is not None else (
            out._dtype if isinstance(out, Tensor) else _dt.get_default_dtype())
        shape = _size(args) if size is NO_SIZE else size_arg(args, size, name)
        r = _full(shape, value, dt, device, requires_grad)
        return r if out is None else _into_out(r, out)
    make.__name__ = make.__qualname__ = name
    return make


zeros = _filled(0, "zeros")
ones = _filled(1, "ones")
empty = _filled(0, "empty")      # zero-filled: reading "uninitialised" memory never leaks stale data


def _like(maker):
    def make(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
        return maker(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                     requires_grad=requires_grad)
    return make


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    m = n if m is None else m
    for pos, name, v in ((1, "n", n), (2, "m", m)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"eye(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}")
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    check_shape((n, m), dt.itemsize)
    try:
        host = np.eye(n, m, dtype=dt.name)
    except MemoryError:
        raise out_of_memory((n, m), dt.itemsize, _CPU) from None
    return _from_host(host, dt, device, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    for v in vals:
        if not isinstance(v, numbers.Real):
            raise TypeError(f"arange(): argument 'end' must be Number, not {type(v).__name__}")
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dtype is None:
        dt = _dt.int64 if all(isinstance(v, (int, np.integer)) for v in vals) else _dt.get_default_dtype()
    else:
        dt = _dt.as_dtype(dtype)
    n = max(0, math.ceil((end - start) / step))
    # computed in float64/int64 like PyTorch, then cast: keeps the length exact
    host = _on_host(n, lambda: (np.arange(n, dtype=np.float64) * step + start) if dt.category == 2 else
                    np.arange(start, start + n * step, step, dtype=np.int64)[:n])
    return _from_host(host, dt, device, requires_grad)


def _on_host(n, make):
    """make(): a float64/int64 host array of n elements; one too big is PyTorch's RuntimeError."""
    check_shape((n,), 8)
    try:
        return make()
    except MemoryError:
        raise out_of_memory((n,), 8, _CPU) from None


def range_(start, end, step=1, *, dtype=None, device=None, requires_grad=False):
    """torch.range (deprecated in PyTorch): includes `end`."""
    n = int(math.floor((end - start) / step)) + 1
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    return _from_host(_host_cast(_on_host(n, lambda: np.arange(n, dtype=np.float64) * step + start), dt), dt,
                      device, requires_grad)


def _steps(steps, fn):
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        raise TypeError(f"{fn}(): argument 'steps' (position 3) must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    _steps(steps, "linspace")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    host = _on_host(steps, lambda: np.linspace(start, end, steps, dtype=np.float64))
    return _from_host(_host_cast(host, dt), dt, device, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    _steps(steps, "logspace")
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    host = _on_host(steps, lambda: np.logspace(start, end, steps, base=base, dtype=np.float64))
    return _from_host(_host_cast(host, dt), dt, device, requires_grad)


# -- legacy constructors ---------------------------------------------------------------------------
def legacy_construct(cls, dt, args, kwargs):
    """FloatTensor(5, 7, 3) (sizes, zero-filled), FloatTensor([1, 2]) (data), FloatTensor() (empty)."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"unexpected keyword arguments {sorted(kwargs)} for {dt._legacy}")
    if not args:
        t = zeros(0, dtype=dt, device=device)
    elif len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0].to(dt)
    elif all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args) or \
            (len(args) == 1 and args[0].__class__.__name__ == "Size"):
        t = zeros(*(_size(args)), dtype=dt, device=device)
    elif len(args) == 1:
        t = tensor(args[0], dtype=dt, device=device)
    else:
        raise TypeError(f"{dt._legacy}() takes sizes (ints) or one sequence of data, got {args!r}")
    if cls is not Tensor:
        from ..tensor import _retype
        t = _retype(t, cls)
    return t


def _legacy_class(dt):
    meta = type(Tensor)

    class _LegacyMeta(meta):
        def __instancecheck__(self, obj):
            return isinstance(obj, Tensor) and obj.dtype is dt

        def __call__(self, *args, **kwargs):
            return legacy_construct(Tensor, dt, list(args), dict(kwargs))

    return _LegacyMeta(dt._legacy, (), {"__doc__": f"Legacy constructor of {dt!r} tensors.", "dtype": dt})


FloatTensor = _legacy_class(_dt.float32)
DoubleTensor = _legacy_class(_dt.float64)
HalfTensor = _legacy_class(_dt.float16)
BFloat16Tensor = _legacy_class(_dt.bfloat16)
LongTensor = _legacy_class(_dt.int64)
IntTensor = _legacy_class(_dt.int32)
ShortTensor = _legacy_class(_dt.int16)
CharTensor = _legacy_class(_dt.int8)
ByteTensor = _legacy_class(_dt.uint8)
BoolTensor = _legacy_class(_dt.bool_)


# -- conversion and transfer ---------------------------------------------------------------------------
def _parse_to(args, kwargs):
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dt.dtype) or a in (float, int, bool):
            dtype = a
        elif isinstance(a, (str, Device)) or a.__class__ is int:      # an int: accelerator index
            device = a
        elif isinstance(a, bool):
            pass
        elif a is None:
            pass
        else:
            raise TypeError(f"to() received an invalid argument {a!r}")
    return device, dtype, copy


def to(self, *args, **kwargs):
    """Move to a device and/or convert to a dtype; returns self when nothing changes."""
    device, dtype, copy = _parse_to(args, dict(kwargs))
    dt = _dt.as_dtype(dtype) if dtype is not None else self._dtype
    if device is not None:
        k, dev = resolve_device(device)
    else:
        k, dev = self._k, self._dev
    if k is self._k and dev is self._dev:
        if dt is self._dtype:
            return self.clone() if copy else self
        check_dtype(k, dt)
        r = _make(k["astype"](self._data, dt.name), dt, k, dev)
    else:
        check_dtype(k, dt)
        host = np.asarray(self._k["to_numpy"](self._data))
        if host.dtype.kind == "c" and dt.category != 3:
            host = host.real            # (the frontend warns below, as PyTorch; NumPy's warning would repeat it)
        if host.dtype.name != dt.name:
            host = _host_cast(host, dt)
        elif isinstance(self._data, np.ndarray) and np.may_share_memory(host, self._data):
            host = host.copy()      # to_numpy and from_numpy may both alias: the copy must not
        with k["__backend__"].device_context(dev.index):
            r = _make(k["from_numpy"](host), dt, k, dev)
    if self._dtype.category == 3 and dt.category != 3:
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
    if self._rg and _gstate.enabled and dt.category >= 2:
        src_dt, src_dev = self._dtype, self._dev
        record("ToCopyBackward0", r, (self,), lambda g: (cast_grad(g, src_dt).to(device=src_dev),))
    return r


def cpu(self):
    return to(self, "cpu")


def cuda(self, device=None, non_blocking=False):
    if device is None:
        return to(self, "cuda")
    dev = Device("cuda", device) if device.__class__ is int else as_device(device)
    if dev.type != "cuda":
        raise RuntimeError("Invalid device, must be cuda device")
    return to(self, dev)


def clone(self, *, memory_format=None):
    r = _make(self._k["copy"](self._data), self._dtype, self._k, self._dev)
    if self._rg and _gstate.enabled:
        record("CloneBackward0", r, (self,), lambda g: (g,))
    return r


def type_(self, dtype=None, non_blocking=False):
    """With no argument: the legacy type name ('tensorplug.FloatTensor'); else convert."""
    if dtype is None:
        return "tensorplug." + self._dtype._legacy
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        match = [d for d in _dt.ALL if d._legacy == name]
        if not match:
            raise ValueError(f"invalid type: {dtype!r}")
        dtype = match[0]
    elif hasattr(dtype, "dtype") and isinstance(getattr(dtype, "dtype"), _dt.dtype):
        dtype = dtype.dtype
    return to(self, dtype)


def _converter(dt):
    def convert(self, memory_format=None):
        return to(self, dt)
    return convert


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self._dtype, device=device or self._dev, requires_grad=requires_grad)


def _new_filled(maker):
    name = f"new_{maker.__name__}"

    def make(self, *args, size=NO_SIZE, dtype=None, device=None, requires_grad=False):
        shape = _size(args) if size is NO_SIZE else size_arg(args, size, name)
        return maker(shape, dtype=dtype or self._dtype, device=device or self._dev, requires_grad=requires_grad)
    make.__name__ = make.__qualname__ = name
    return make


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self._dtype, device=device or self._dev,
                requires_grad=requires_grad)


def _attach():
    T = Tensor
    T.to, T.cpu, T.cuda, T.clone, T.type = to, cpu, cuda, clone, type_
    T.float, T.double, T.half = _converter(_dt.float32), _converter(_dt.float64), _converter(_dt.float16)
    T.bfloat16 = _converter(_dt.bfloat16)
    T.long, T.int, T.short = _converter(_dt.int64), _converter(_dt.int32), _converter(_dt.int16)
    T.char, T.byte, T.bool = _converter(_dt.int8), _converter(_dt.uint8), _converter(_dt.bool_)
    T.new_tensor = new_tensor
    T.new_zeros, T.new_ones, T.new_empty = _new_filled(zeros), _new_filled(ones), _new_filled(empty)
    T.new_full = new_full
    T.type_as = lambda self, other: to(self, other.dtype)


_attach()

PUBLIC = ["tensor", "as_tensor", "asarray", "frombuffer", "from_numpy", "full", "zeros", "ones", "empty",
          "zeros_like", "ones_like", "empty_like", "full_like", "eye", "arange", "linspace", "logspace", "clone",
          "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
          "ByteTensor", "BoolTensor", "BFloat16Tensor"]
