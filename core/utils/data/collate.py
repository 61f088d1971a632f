"""Collation: turn a list of samples into a batch (`default_collate`), or convert one sample's
NumPy arrays and numbers into tensors (`default_convert`, used when auto-batching is off).

default_collate, by the type of the first sample:
  Tensor            -> tensorplug.stack(batch)           (shapes must match)
  NumPy array       -> a stacked tensor                   (string/object arrays: TypeError)
  NumPy scalar      -> a 1-D tensor
  float / int / bool-> tensor(batch) (float64 / int64 / bool)
  str / bytes       -> the list unchanged
  Mapping           -> the same mapping type, each key collated
  namedtuple        -> the same namedtuple, each field collated
  other Sequence    -> a list (tuples too, like PyTorch) of collated "columns" (equal lengths)

`collate(batch, collate_fn_map=...)` is the extensible core: `collate_fn_map` maps a type (or tuple
of types) to `fn(batch, *, collate_fn_map)`; `default_collate_fn_map` holds the built-in leaf rules.
"""
from __future__ import annotations

import collections.abc as abc
import copy
import re

import numpy as np

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
                                  "dicts or lists; found {}")


def _tensor_cls():
    from ...tensor import Tensor
    return Tensor


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data):
    """NumPy arrays and scalars in `data` (recursively) become tensors; everything else is kept."""
    from ...ops.creation import as_tensor
    Tensor = _tensor_cls()
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        if data.dtype.kind in "SaUO":
            return data
        return as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return as_tensor(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, abc.Mapping):
        try:
            if isinstance(data, abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(v) for k, v in data.items()})
                return clone
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence):
        try:
            if isinstance(data, abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate `batch` (a list of samples) with the leaf rules in `collate_fn_map` and the
    container rules (mappings, namedtuples, sequences) described in the module docstring."""
    if not isinstance(batch, (list, tuple)):
        batch = list(batch)
    if not batch:
        raise ValueError("collate: the batch is empty")
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for kind, fn in collate_fn_map.items():
            if isinstance(elem, kind):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, abc.Mapping):
        try:
            if isinstance(elem, abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    if _is_namedtuple(elem):
        return elem_type(*(collate(list(samples), collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, abc.Sequence) and not isinstance(elem, (str, bytes)):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(list(s), collate_fn_map=collate_fn_map) for s in transposed]
        try:
            if isinstance(elem, abc.MutableSequence):
                clone = copy.copy(elem)
                for i, s in enumerate(transposed):
                    clone[i] = collate(list(s), collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(list(s), collate_fn_map=collate_fn_map) for s in transposed])
        except TypeError:
            return [collate(list(s), collate_fn_map=collate_fn_map) for s in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


# -- leaf rules ----------------------------------------------------------------------------------------
def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ...ops.shape import stack
    Tensor = _tensor_cls()
    for i, b in enumerate(batch):
        if not isinstance(b, Tensor):
            raise TypeError(f"default_collate: batch element 0 is a Tensor but element {i} is "
                            f"{type(b).__name__}")
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import from_numpy
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    shape = elem.shape
    for i, b in enumerate(batch):
        if not isinstance(b, np.ndarray) or b.shape != shape:
            got = list(b.shape) if isinstance(b, np.ndarray) else type(b).__name__
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                               f"and {got} at entry {i}")
    return from_numpy(np.stack(batch, 0))


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import from_numpy
    return from_numpy(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import tensor
    return tensor(batch, dtype="float64")


def collate_int_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def _numpy_scalar_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if isinstance(elem, (np.str_, np.bytes_)) or elem.dtype.kind in "SaUO":
        raise TypeError(default_collate_err_msg_format.format(type(elem)))
    return collate_numpy_scalar_fn(batch)


def _build_default_map():
    Tensor = _tensor_cls()
    return {
        Tensor: collate_tensor_fn,
        np.ndarray: collate_numpy_array_fn,
        np.generic: _numpy_scalar_fn,
        float: collate_float_fn,
        bool: collate_int_fn,
        int: collate_int_fn,
        str: collate_str_fn,
        bytes: collate_str_fn,
    }


default_collate_fn_map = _build_default_map()


def default_collate(batch):
    """Stack a list of samples into a batch (see the module docstring for the rules).

    >>> default_collate([(1, 2.0), (3, 4.0)])
    [tensor([1, 3]), tensor([2., 4.], dtype=tensorplug.float64)]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
