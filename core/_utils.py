"""The functions PyTorch's checkpoints call to rebuild tensors (their pickles name them
torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, torch._tensor._rebuild_from_type_v2,
...); tensorplug.save names the same ones, so files go both ways.

    _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks)

Every argument comes from a file, so each is checked before use (tensorplug.storage.tensor_view);
what tensorplug cannot represent (quantized, sparse, nested, meta tensors) is a RuntimeError saying
so.
"""
from __future__ import annotations

from .storage import TypedStorage, UntypedStorage, numpy_dtype, tensor_view

__all__ = ["_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
           "_rebuild_parameter_with_state", "_rebuild_from_type_v2", "_rebuild_device_tensor_from_numpy",
           "_rebuild_device_tensor_from_cpu_tensor", "tensor_state", "set_obj_state"]


def _rebuild_tensor(storage, storage_offset, size, stride):
    return tensor_view(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = tensor_view(storage, storage_offset, size, stride)
    _set_requires_grad(t, requires_grad)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    """A tensor of `dtype` over an untyped (byte) storage."""
    from . import dtypes as _dt
    if not isinstance(storage, (UntypedStorage, TypedStorage)) or type(dtype) is not _dt.dtype:
        raise RuntimeError("_rebuild_tensor_v3 expects an untyped storage and a dtype")
    raw = storage._array.view("uint8")
    if raw.shape[0] % dtype.itemsize:
        raise RuntimeError(f"a storage of {raw.shape[0]} bytes does not hold whole {dtype.name} elements")
    typed = TypedStorage._wrap(raw.view(numpy_dtype(dtype)), storage._device, storage._ver)
    return _rebuild_tensor_v2(typed, storage_offset, size, stride, requires_grad, backward_hooks, metadata)


def _set_requires_grad(t, requires_grad):
    if not isinstance(requires_grad, bool):
        raise RuntimeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    if requires_grad:
        t.requires_grad = True


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from .nn.parameter import Parameter
    from .tensor import Tensor
    if not isinstance(data, Tensor):
        raise RuntimeError(f"a Parameter is rebuilt from a tensor, got {type(data).__name__}")
    if not isinstance(requires_grad, bool):
        raise RuntimeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad, backward_hooks)
    set_obj_state(p, state)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    """func(*args) (a tensor), as an instance of new_type, with attributes `state` (a Buffer's
    `_is_buffer` / `persistent` make a tensorplug nn.Buffer)."""
    from .tensor import Tensor, _retype
    if not isinstance(args, tuple):
        raise RuntimeError("_rebuild_from_type_v2 expects a tuple of arguments")
    ret = func(*args)
    if not isinstance(new_type, type) or not issubclass(new_type, Tensor) or not isinstance(ret, Tensor):
        raise RuntimeError(f"_rebuild_from_type_v2 can only make tensors (got {new_type!r})")
    if type(ret) is not new_type:
        ret = _retype(ret, new_type)
    if isinstance(state, dict) and state.get("_is_buffer") is True:
        from .nn.parameter import Buffer
        state = dict(state)
        del state["_is_buffer"]
        persistent = state.pop("persistent", True)
        rg = ret._rg
        ret = Buffer(ret, persistent=bool(persistent))
        ret._rg = rg
    set_obj_state(ret, state)
    return ret


def _rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    import numpy as np
    from .ops.creation import from_numpy
    if not isinstance(data, np.ndarray):
        raise RuntimeError("_rebuild_device_tensor_from_numpy expects a NumPy array")
    t = from_numpy(data).to(dtype=dtype, device=device)
    _set_requires_grad(t, requires_grad)
    return t


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    from .tensor import Tensor
    if not isinstance(data, Tensor):
        raise RuntimeError("_rebuild_device_tensor_from_cpu_tensor expects a tensor")
    t = data.to(dtype=dtype, device=device)
    _set_requires_grad(t, requires_grad)
    return t


def _unsupported(name, what):
    def rebuild(*args, **kwargs):
        raise RuntimeError(f"the file holds {what}, which tensorplug does not support")
    rebuild.__name__ = rebuild.__qualname__ = name
    return rebuild


_rebuild_meta_tensor_no_storage = _unsupported("_rebuild_meta_tensor_no_storage", "meta tensors (no data)")
_rebuild_qtensor = _unsupported("_rebuild_qtensor", "quantized tensors")
_rebuild_nested_tensor = _unsupported("_rebuild_nested_tensor", "nested tensors")
_rebuild_wrapper_subclass = _unsupported("_rebuild_wrapper_subclass", "wrapper tensor subclasses")


def _rebuild_sparse_tensor(layout, data):
    """A sparse COO tensor from a file: data is PyTorch's (indices, values, size, is_coalesced)."""
    from ._layout import sparse_coo
    if layout is not sparse_coo and layout != "torch.sparse_coo":
        raise RuntimeError(f"the file holds a {layout} tensor, which tensorplug does not support")
    from .sparse._creation import sparse_coo_tensor
    return sparse_coo_tensor(data[0], data[1], data[2], is_coalesced=data[3] if len(data) > 3 else None)


# -- a tensor's own attributes ----------------------------------------------------------------------------
def _internal(name):
    from .tensor import Tensor
    return hasattr(Tensor, name)


def tensor_state(t):
    """The attributes a user set on tensor t (its __dict__ minus tensorplug's own bookkeeping)."""
    d = getattr(t, "__dict__", None)
    if not d:
        return {}
    return {k: v for k, v in d.items() if not _internal(k)}


def set_obj_state(obj, state):
    """Set the attributes `state` ({name: value}, or (dict, slot dict) as pickle's BUILD) on obj;
    names of tensorplug's own tensor bookkeeping are refused."""
    if state is None:
        return
    if isinstance(state, tuple) and len(state) == 2:
        dict_state, slots = state
    else:
        dict_state, slots = state, None
    for part in (dict_state, slots):
        if part is None:
            continue
        if not isinstance(part, dict):
            raise RuntimeError(f"an object's saved state must be a dict, got {type(part).__name__}")
        for k, v in part.items():
            if not isinstance(k, str) or _internal(k):
                raise RuntimeError(f"refusing to set attribute {k!r} from a file")
            obj.__dict__[k] = v

