"""What a tensor or a dtype is: finfo / iinfo, can_cast, is_tensor, numel, is_floating_point,
is_complex, is_nonzero, and the layout methods stride() / storage_offset() / get_device() / layout /
data_ptr() / untyped_storage() / storage() / nbytes."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ._core import Tensor, wrap_dim
from .shape import _strides, row_major_strides

PUBLIC = ["finfo", "iinfo", "can_cast", "is_tensor", "numel", "is_floating_point", "is_complex", "is_nonzero"]


def _dtype_arg(type, what):
    if type is None:
        return _dt.get_default_dtype()
    if not isinstance(type, _dt.dtype):
        raise TypeError(f"{what}(): argument 'type' must be tensorplug.dtype, not {type.__class__.__name__}")
    return type


class finfo:
    """Machine limits of a floating point dtype (default: the default dtype), as torch.finfo."""
    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type=None):
        t = _dtype_arg(type, "finfo")
        if not t.is_floating_point:
            raise TypeError("tensorplug.finfo() requires a floating point input type. Use tensorplug.iinfo to "
                            "handle 'tensorplug.finfo'")
        if t is _dt.bfloat16:          # NumPy's finfo does not know ml_dtypes' types; ml_dtypes has its own
            import ml_dtypes
            f = ml_dtypes.finfo(_dt.numpy_bfloat16())
        else:
            f = np.finfo(t.name)
        self.bits, self.dtype = int(f.bits), t.name
        self.eps, self.max, self.min = float(f.eps), float(f.max), float(f.min)
        self.tiny = self.smallest_normal = float(f.smallest_normal)
        self.resolution = 10.0 ** -int(f.precision)      # as a Python float (NumPy's is in the dtype)

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as torch.iinfo."""
    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type):
        t = _dtype_arg(type, "iinfo")
        if t is _dt.bool_:
            raise TypeError("tensorplug.bool is not supported by tensorplug.iinfo")
        if t.is_floating_point:
            raise TypeError("tensorplug.iinfo() requires an integer input type. Use tensorplug.finfo to handle "
                            "'tensorplug.iinfo'")
        i = np.iinfo(t.name)
        self.bits, self.max, self.min, self.dtype = int(i.bits), int(i.max), int(i.min), t.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rules allow from_ -> to in ops with out= / in place: no lowering of
    category (float -> int, int -> bool); any size within a category."""
    for name, t in (("from_", from_), ("to", to)):
        if not isinstance(t, _dt.dtype):
            raise TypeError(f"can_cast(): argument '{name}' must be tensorplug.dtype, not {t.__class__.__name__}")
    return from_.category <= to.category


def _tensor_arg(t, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}(): argument 'input' must be Tensor, not {t.__class__.__name__}")
    return t


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(input) -> int:
    return _tensor_arg(input, "numel").numel()


def is_floating_point(input) -> bool:
    return _tensor_arg(input, "is_floating_point")._dtype.is_floating_point


def is_complex(input) -> bool:
    return _tensor_arg(input, "is_complex")._dtype.is_complex


def is_nonzero(input) -> bool:
    """The truth value of a one-element tensor (RuntimeError for none or several)."""
    n = _tensor_arg(input, "is_nonzero").numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def stride(self, dim=None):
    """Element strides: the backend array's when it exposes them (NumPy, CuPy), else row-major ones
    (a backend that hides its layout)."""
    shape = self._data.shape
    st = _strides(self._data, self._dtype.itemsize)
    if st is None:
        st = row_major_strides(shape)
    if dim is None:
        return st
    return st[wrap_dim(dim, len(shape))]


def storage_offset(self) -> int:
    """Offset of the first element in the memory block it views (elements), as PyTorch's: read from the
    array's address where the backend's arrays expose one (so tensors loaded from a checkpoint, or made
    by from_numpy on a view, report it too), else from the view's recorded steps."""
    if self.numel() == 0:
        return 0
    from ..storage import address, root_array
    try:
        return (address(self._data) - address(root_array(self._data))) // self._dtype.itemsize
    except RuntimeError:        # arrays without an address interface
        pass
    if self._base is None:
        return 0
    if self._vsteps is None:
        raise RuntimeError("storage_offset(): the steps that made this view are unknown")
    from .view_inplace import positions
    return int(positions(self)[0].item())


def get_device(self) -> int:
    """The device index (-1 for the CPU), as Tensor.get_device."""
    idx = self._dev.index
    return -1 if self._dev.type == "cpu" else (0 if idx is None else idx)


def data_ptr(self) -> int:
    """The address of the first element (0 for a tensor without memory, as PyTorch)."""
    from ..storage import address, root_array
    data = self._data
    return 0 if getattr(root_array(data), "nbytes", 1) == 0 else address(data)


def untyped_storage(self):
    """The bytes this tensor views (an UntypedStorage sharing them): tensors that share memory have
    storages with one data_ptr()."""
    from ..storage import tensor_storage
    return tensor_storage(self)


def storage(self):
    """The typed storage of this tensor's memory (deprecated in PyTorch, with its warning)."""
    import warnings
    from ..storage import tensor_storage
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                  UserWarning, stacklevel=2)
    return tensor_storage(self, typed=True)


def _layout(self):
    from .._layout import strided
    return strided


def _attach():
    T = Tensor
    T.data_ptr, T.untyped_storage, T.storage = data_ptr, untyped_storage, storage
    T.layout = property(_layout)
    T.nbytes = property(lambda self: self.numel() * self._dtype.itemsize)
    T.stride, T.storage_offset, T.get_device = stride, storage_offset, get_device
    T.is_complex, T.is_nonzero = is_complex, is_nonzero
    T.is_signed = lambda self: self._dtype.is_signed


_attach()
