"""torch.nn.parallel.scatter_gather: split inputs across devices (scatter, scatter_kwargs) and bring
per-device outputs back onto one (gather). Both are differentiable: a scattered chunk's gradient
goes back to the input on its device, a gathered piece's to the device it came from.

Containers are walked: tensors are chunked along `dim` (Tensor.chunk: ceil(n / k) rows each, so
5 rows on 2 devices give 3 + 2, and fewer pieces than devices when the batch is small), tuples,
lists, dicts and namedtuples give one container per device, anything else is handed to every
device as it is. gather is the reverse, over the per-device outputs' common structure.
"""
from __future__ import annotations

import warnings

from ...ops.shape import cat
from ...tensor import Tensor
from ._devices import as_device

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _scatter_tensor(t, devices, dim):
    if t.ndim == 0:
        raise ValueError("scatter: cannot split a 0-dimensional tensor across devices (give it at "
                         "least one dimension, or pass it as a non-tensor)")
    if not -t.ndim <= dim < t.ndim:
        raise IndexError(f"scatter: dim {dim} is out of range for a tensor of shape {list(t.shape)}")
    return tuple(chunk.to(dev) for chunk, dev in zip(t.chunk(len(devices), dim), devices))


def scatter(inputs, target_gpus, dim=0):
    """A list with one version of `inputs` per device of `target_gpus` (indices or devices), its
    tensors split along `dim`; as long as the fewest pieces any tensor gives."""
    devices = [as_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return _scatter_tensor(obj, devices, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and obj:
            return [list(parts) for parts in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(parts) for parts in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]
    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """(inputs per device, kwargs per device), both tuples of the same length."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def _gather_tensors(tensors, target, dim):
    if all(t.ndim == 0 for t in tensors):
        warnings.warn(f"gather along dimension {dim}: every input is a scalar, so they are unsqueezed "
                      f"and returned as a vector.")
        tensors = [t.reshape(1) for t in tensors]
        dim = 0
    return cat([t.to(target) for t in tensors], dim)


def gather(outputs, target_device, dim=0):
    """One output from the per-device `outputs`: tensors concatenated along `dim` on
    `target_device` (an index of the accelerator, -1 or "cpu" for the cpu), containers rebuilt."""
    target = as_device(target_device)

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            return _gather_tensors(outs, target, dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))
    return gather_map(outputs)
