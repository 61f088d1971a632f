"""Storages: the flat typed memory a saved tensor is a view of (torch.storage.TypedStorage,
UntypedStorage and the legacy classes torch.FloatStorage, torch.LongStorage, ...).

A tensorplug tensor owns its memory through its backend array, so storages matter at the file
boundary: a checkpoint names one storage class per block of memory, `map_location` callables
receive a storage (`lambda storage, loc: storage` and `storage.cuda(1)` work as in PyTorch), and the
rebuild functions of tensorplug._utils view a storage as a tensor. A storage holds a 1-D host
NumPy array; `.cuda()` / `.to()` only record where its tensors go (each tensor is moved when it is
made, so on another device tensors that shared a storage no longer share memory).

`Tensor.untyped_storage()` / `Tensor.storage()` (tensor_storage) wrap the memory a tensor views:
the whole block its array's base chain ends in, on the tensor's own device (a NumPy or CuPy array),
so `data_ptr()` and `nbytes()` tell which tensors share memory (what safetensors checks).
`UntypedStorage.from_file` maps a file; slicing an UntypedStorage gives a storage sharing its bytes,
and `tensorplug.asarray(storage, dtype=...)` views them as a tensor.

    s = tensorplug.FloatStorage([1, 2, 3])
    s.dtype, s.size(), s.tolist()          # (tensorplug.float32, 3, [1.0, 2.0, 3.0])
"""
from __future__ import annotations

import os

import numpy as np

from . import dtypes as _dt
from .device import device as _Device

__all__ = ["UntypedStorage", "TypedStorage", "LEGACY_STORAGES", "legacy_class", "numpy_dtype", "tensor_view",
           "tensor_storage", "storage_as_tensor"]

_CPU = _Device("cpu")


def numpy_dtype(dt):
    """The NumPy dtype of tensorplug dtype dt (bfloat16 from ml_dtypes)."""
    return _dt.numpy_bfloat16() if dt is _dt.bfloat16 else np.dtype(dt.name)


class _Storage:
    """Common part: `_array` (1-D host NumPy array), `_device` (where its tensors go), `_ver` (the
    version counter its tensors share)."""
    __slots__ = ("_array", "_device", "_ver", "__weakref__")
    is_sparse = False

    @classmethod
    def _wrap(cls, array, device=_CPU, ver=None):
        s = object.__new__(cls)
        s._array, s._device, s._ver = array, device, ver if ver is not None else [0]
        return s

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    def size(self) -> int:
        return int(self._array.shape[0])

    def __len__(self):
        return self.size()

    def nbytes(self) -> int:
        return int(self._array.nbytes)

    def element_size(self) -> int:
        return int(self._array.itemsize)

    def tolist(self):
        return self._array.tolist()

    def data_ptr(self) -> int:
        """The address of the first byte (0 for an empty storage, as PyTorch)."""
        return address(self._array) if self._array.shape[0] else 0

    def share_memory_(self):
        """Move these bytes into shared memory (tensorplug.multiprocessing); returns self."""
        from .multiprocessing._sharing import share_storage_
        return share_storage_(self)

    def is_shared(self) -> bool:
        from .multiprocessing._sharing import storage_is_shared
        return storage_is_shared(self)

    def to(self, device=None, non_blocking=False):
        """This storage's data placed on `device` (recorded; its tensors are moved when made)."""
        from .ops.creation import resolve_device
        dev = resolve_device(device)[1] if device is not None else self._device
        return type(self)._wrap(self._array, dev, self._ver) if dev is not self._device else self

    def cpu(self):
        return self.to(_CPU)

    def cuda(self, device=None, non_blocking=False):
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = _Device("cuda", device)
        return self.to(device)

    def __repr__(self):
        return f"{self._array.tolist()}\n[{type(self).__module__}.{type(self).__qualname__}(device={self._device}) " \
               f"of size {self.size()}]"


class UntypedStorage(_Storage):
    """Bytes: `UntypedStorage(nbytes)` (zeros) or `UntypedStorage(bytes-like)`."""
    __slots__ = ()

    def __init__(self, data=0, *, device=None):
        arr = np.zeros(data, np.uint8) if isinstance(data, int) else np.frombuffer(bytes(data), np.uint8).copy()
        self._array, self._device, self._ver = arr, _CPU, [0]
        if device is not None:
            self._device = self.to(device)._device

    def size(self) -> int:
        return self.nbytes()

    def untyped(self):
        return self

    def __getitem__(self, idx):
        """A byte as an int, or (a slice of step 1) an UntypedStorage sharing these bytes."""
        if isinstance(idx, slice):
            start, stop, step = idx.indices(self.nbytes())
            if step != 1:
                raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of 1 is supported")
            return UntypedStorage._wrap(self._array[start:max(start, stop)], self._device, self._ver)
        return int(self._array[self._index(idx)])

    def __setitem__(self, idx, value):
        self._array[idx if isinstance(idx, slice) else self._index(idx)] = value

    def _index(self, idx):
        n = self.nbytes()
        if not _is_int(idx):
            raise TypeError(f"can't index a {type(self).__name__} with {type(idx).__name__}")
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return idx % n

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """The first `nbytes` bytes of a file, mapped: shared=True writes through to the file (created
        or grown when needed); shared=False maps it copy-on-write (writes stay in memory)."""
        return cls._wrap(_map_file(filename, shared, int(nbytes)))


def _map_file(filename, shared, nbytes):
    filename = str(filename)
    if nbytes < 0:
        raise RuntimeError(f"from_file: the size must be non-negative, got {nbytes}")
    if shared:
        try:
            with open(filename, "ab") as f:             # PyTorch creates or grows the file
                if f.tell() < nbytes:
                    f.truncate(nbytes)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{filename}> in read-write mode: {e.strerror} ({e.errno})") \
                from None
    else:
        try:
            have = os.path.getsize(filename)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: {e.strerror} ({e.errno})") \
                from None
        if have < nbytes:
            raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required mapping size "
                               f"<{nbytes}>")
    if nbytes == 0:
        return np.zeros(0, np.uint8)
    return np.memmap(filename, np.uint8, "r+" if shared else "c", shape=(nbytes,))


def address(array) -> int:
    """The address of an array's first element (NumPy, CuPy and any array exposing either interface)."""
    face = getattr(array, "__array_interface__", None) or getattr(array, "__cuda_array_interface__", None)
    if face is None:
        raise RuntimeError(f"the backend's {type(array).__name__} arrays do not expose their memory address")
    return int(face["data"][0])


def root_array(array):
    """The last array of array's type down its .base chain: the block of memory it views."""
    root = obj = array
    kind = type(array)
    while True:
        obj = getattr(obj, "base", None)
        if obj is None:
            return root
        if isinstance(obj, kind):
            root = obj


def tensor_storage(t, typed=False):
    """The storage of the memory tensor t views (Tensor.untyped_storage(); typed: Tensor.storage()).
    Memory a backend does not expose as a strided array, or that is not one contiguous block, gets
    a storage of its own (a copy)."""
    arr = t._data
    root = root_array(arr) if hasattr(arr, "strides") else None
    flags = getattr(root, "flags", None)
    if root is None or flags is None or not (flags.c_contiguous or flags.f_contiguous):
        import warnings
        root = t.contiguous()._data if root is None else root.copy()
        warnings.warn("this tensor's memory is not one contiguous block: its storage is a copy", RuntimeWarning)
    data = root.ravel(order="K").view(np.uint8)
    if not typed:
        return UntypedStorage._wrap(data, t._dev, t._ver)
    isz = t._dtype.itemsize
    data = data[:data.shape[0] - data.shape[0] % isz].view(numpy_dtype(t._dtype))
    return TypedStorage._wrap(data, t._dev, t._ver)


def storage_as_tensor(storage, dtype=None):
    """A 1-D tensor over all of a storage's bytes read as `dtype` (default: a TypedStorage's own dtype,
    int64 for an UntypedStorage, as torch.asarray), sharing its memory on the CPU."""
    if not isinstance(storage, _Storage):
        raise TypeError(f"expected a storage, got {type(storage).__name__}")
    dt = _dt.as_dtype(dtype) if dtype is not None else \
        storage.dtype if isinstance(storage, TypedStorage) else _dt.int64
    raw = storage._array.view(np.uint8)
    if raw.shape[0] % dt.itemsize:
        raise RuntimeError(f"the storage's {raw.shape[0]} bytes are not a whole number of {dt.name} elements "
                           f"({dt.itemsize} bytes each)")
    return tensor_view(UntypedStorage._wrap(raw, storage._device, storage._ver) if dt is _dt.uint8 else
                       TypedStorage._wrap(raw.view(numpy_dtype(dt)), storage._device, storage._ver),
                       0, (raw.shape[0] // dt.itemsize,), (1,))


class _ClassDtype:
    """`FloatStorage.dtype` on the class and `storage.dtype` on an instance, as PyTorch."""

    def __get__(self, obj, cls):
        if obj is not None:
            return _dt.BY_NAME[obj._array_dtype_name()]
        name = cls._dtype_name
        if name is None:
            raise RuntimeError(f"{cls.__name__} holds {cls._torch_dtype} data, which tensorplug does not support")
        return _dt.BY_NAME[name]


class TypedStorage(_Storage):
    """Elements of one dtype: `TypedStorage(n, dtype=...)` (zeros), or from a sequence."""
    __slots__ = ()
    _dtype_name = None
    _torch_dtype = None
    dtype = _ClassDtype()

    def __init__(self, data=0, *, dtype=None, device=None):
        dt = _dt.as_dtype(dtype) if dtype is not None else type(self).dtype if type(self) is not TypedStorage \
            else _dt.get_default_dtype()
        npd = numpy_dtype(dt)
        arr = np.zeros(data, npd) if isinstance(data, int) else np.asarray(list(data)).astype(npd).reshape(-1)
        self._array, self._device, self._ver = arr, _CPU, [0]
        if device is not None:
            self._device = self.to(device)._device

    def _array_dtype_name(self):
        return self._array.dtype.name          # (ml_dtypes names its dtype "bfloat16")

    def untyped(self):
        return UntypedStorage._wrap(self._array.view(np.uint8), self._device, self._ver)

    def pickle_storage_type(self):
        return legacy_class(self.dtype).__name__


# PyTorch's legacy storage classes (its pickles name one per storage): class name -> dtype name in
# PyTorch, and the tensorplug dtype name (None: no such dtype in tensorplug)
_LEGACY = {
    "ByteStorage": ("uint8", "uint8"), "CharStorage": ("int8", "int8"), "ShortStorage": ("int16", "int16"),
    "IntStorage": ("int32", "int32"), "LongStorage": ("int64", "int64"), "HalfStorage": ("float16", "float16"),
    "FloatStorage": ("float32", "float32"), "DoubleStorage": ("float64", "float64"),
    "BoolStorage": ("bool", "bool"), "BFloat16Storage": ("bfloat16", "bfloat16"),
    "ComplexFloatStorage": ("complex64", "complex64"), "ComplexDoubleStorage": ("complex128", "complex128"),
    "QUInt8Storage": ("quint8", None), "QInt8Storage": ("qint8", None), "QInt32Storage": ("qint32", None),
    "QUInt4x2Storage": ("quint4x2", None), "QUInt2x4Storage": ("quint2x4", None),
}


def _make_legacy(name, torch_dtype, dtype_name):
    cls = type(name, (TypedStorage,), {"__slots__": (), "_dtype_name": dtype_name, "_torch_dtype": torch_dtype,
                                       "__doc__": f"Legacy storage of {torch_dtype} elements (torch.{name})."})
    cls.__module__ = "tensorplug"           # torch.FloatStorage lives at the top of torch, so in pickles
    return cls


LEGACY_STORAGES = {name: _make_legacy(name, t, d) for name, (t, d) in _LEGACY.items()}
globals().update(LEGACY_STORAGES)
__all__ += list(LEGACY_STORAGES)
_BY_DTYPE = {cls._dtype_name: cls for cls in LEGACY_STORAGES.values() if cls._dtype_name}


def legacy_class(dt):
    """The legacy storage class (FloatStorage ...) of tensorplug dtype dt."""
    return _BY_DTYPE[dt.name]


def storage_dtype(cls):
    """The tensorplug dtype a storage class stands for (UntypedStorage: uint8); RuntimeError naming the
    PyTorch dtype when tensorplug has none."""
    if cls is UntypedStorage:
        return _dt.uint8
    return cls.dtype


def tensor_view(storage, offset, size, stride):
    """A tensor viewing `storage` from element `offset` with `size` and `stride` (in elements), sharing
    its memory when the storage's device is the CPU. Every argument is checked first: a bad one is a
    RuntimeError (never an out-of-bounds view)."""
    from .ops.creation import resolve_device
    from .tensor import _make
    if not isinstance(storage, _Storage):
        raise RuntimeError(f"expected a storage to rebuild a tensor from, got {type(storage).__name__}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if not _is_int(offset) or offset < 0:
        raise RuntimeError(f"invalid storage offset {offset!r}")
    if len(size) != len(stride) or len(size) > 64:
        raise RuntimeError(f"invalid tensor geometry: size {list(size)} and stride {list(stride)}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"negative size or stride: size {list(size)}, stride {list(stride)}")
    arr = storage._array
    n = arr.shape[0]
    numel = 1
    for s in size:
        numel *= s
    if numel:
        need = offset + 1 + sum((s - 1) * st for s, st in zip(size, stride))
        if need > n:
            isz = arr.itemsize
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
                               f"and itemsize {isz} requiring a storage size of {need * isz} are out of bounds "
                               f"for storage of size {n * isz}")
        # a view whose .base is the storage's array (tensorplug.save finds the storage again through it)
        view = np.ndarray(size, arr.dtype, buffer=arr.view(np.uint8), offset=offset * arr.itemsize,
                          strides=[st * arr.itemsize for st in stride])
    else:
        view = arr[:0].reshape(size)
    dt = _dt.BY_NAME[storage._array_dtype_name()] if isinstance(storage, TypedStorage) else _dt.uint8
    k, dev = resolve_device(_CPU)
    t = _make(k["from_numpy"](view), dt, k, dev)
    t._ver = storage._ver
    if storage._device is not _CPU:
        t = t.to(storage._device)
    return t


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _ints(seq, what):
    if not isinstance(seq, (tuple, list)) or not all(_is_int(v) for v in seq):
        raise RuntimeError(f"invalid tensor {what} {seq!r}: expected a tuple of ints")
    return tuple(seq)
