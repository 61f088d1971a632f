"""How tensors and storages cross process boundaries: through shared memory, not copies.

`init_reductions()` registers reducers with multiprocessing's ForkingPickler (what Queue, Pipe,
SimpleQueue, Pool and spawn's Process arguments pickle with). A CPU tensor is moved into shared
memory in the sender (when it is not there already, as PyTorch does) and the pickle carries the
segment's handle plus dtype, shape, strides, byte offset and requires_grad; the receiver maps the
same memory, so writes on either side are seen on the other. A Parameter's `.grad` travels with it,
shared too. Ordinary pickles (tensorplug.save, pickle.dumps) are unaffected: they copy.
"""
from __future__ import annotations

import numpy as np

from ._segment import handle, open_handle, segment_of
from ._sharing import share_storage_, share_tensor_

__all__ = ["init_reductions", "reduce_tensor", "reduce_storage", "rebuild_tensor", "rebuild_storage"]

_NONLEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad: autograd does not cross process "
            "boundaries. To send the data only, call detach() on the tensor first (e.g. before putting it on "
            "the queue).")


def _start(seg):
    return np.frombuffer(seg, np.uint8, 1).__array_interface__["data"][0]


def _offset(arr, seg):
    return arr.__array_interface__["data"][0] - _start(seg) if arr.size else 0


def reduce_tensor(t):
    """ForkingPickler reducer of a tensor: share its memory, send a handle to it."""
    if t._rg and t.grad_fn is not None:
        raise RuntimeError(_NONLEAF)
    if t._dev.type != "cpu":
        raise RuntimeError(f"sending a {t._dev.type} tensor to another process is not supported by tensorplug: "
                           f"move it to the CPU first (tensor.cpu())")
    share_tensor_(t)
    arr = t._data
    seg = segment_of(arr)
    grad = t._grad if _is_parameter(t) else None
    return (rebuild_tensor, (type(t), handle(seg), t._dtype.name, arr.shape, arr.strides, _offset(arr, seg), t._rg,
                             grad))


def rebuild_tensor(cls, h, dtype_name, shape, strides, offset, requires_grad, grad=None):
    """The tensor a reduce_tensor pickle describes, viewing the sender's memory."""
    from .. import dtypes as _dt
    from ..ops.creation import resolve_device
    from ..storage import numpy_dtype
    from ..tensor import _make
    seg = open_handle(h)
    dt = _dt.BY_NAME[dtype_name]
    arr = np.ndarray(shape, numpy_dtype(dt), buffer=np.frombuffer(seg, np.uint8, seg.nbytes), offset=offset,
                     strides=strides) if seg.nbytes else np.zeros(shape, numpy_dtype(dt))
    k, dev = resolve_device("cpu")
    t = _make(k["from_numpy"](arr), dt, k, dev)
    if _is_parameter_class(cls):
        t = cls(t, requires_grad)
    else:
        if cls is not type(t):
            from ..tensor import _retype
            t = _retype(t, cls)
        t._rg = requires_grad
    if grad is not None:
        t.grad = grad
    return t


def _is_parameter_class(cls):
    from ..nn.parameter import Parameter
    return issubclass(cls, Parameter)


def _is_parameter(t):
    return _is_parameter_class(type(t))


def reduce_storage(s):
    """ForkingPickler reducer of a storage: share its bytes, send a handle to them."""
    if s._device.type != "cpu":
        raise RuntimeError(f"sending a {s._device.type} storage to another process is not supported by tensorplug")
    share_storage_(s)
    arr = s._array
    seg = segment_of(arr)
    return (rebuild_storage, (type(s), handle(seg), _offset(arr, seg), arr.shape[0], arr.dtype.name))


def rebuild_storage(cls, h, offset, size, dtype_name):
    from .. import dtypes as _dt
    from ..storage import numpy_dtype
    seg = open_handle(h)
    npd = numpy_dtype(_dt.BY_NAME[dtype_name])
    arr = np.ndarray((size,), npd, buffer=np.frombuffer(seg, np.uint8, seg.nbytes), offset=offset) \
        if size else np.zeros(0, npd)
    return cls._wrap(arr)


_done = False


def init_reductions():
    """Register the reducers with multiprocessing's ForkingPickler (once; by importing
    tensorplug.multiprocessing)."""
    global _done
    if _done:
        return
    from multiprocessing.reduction import ForkingPickler
    from .. import storage
    from ..nn.parameter import Buffer, Parameter
    from ..tensor import Tensor
    for cls in (Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
    for cls in (storage.UntypedStorage, storage.TypedStorage, *storage.LEGACY_STORAGES.values()):
        ForkingPickler.register(cls, reduce_storage)
    _done = True
