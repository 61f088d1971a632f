"""How a v2 transform finds the images in a sample: flatten tuples/lists/dicts, transform the PIL images
(or, when there are none, the tensors) with one shared RNG state, and rebuild the structure."""
from __future__ import annotations

import numpy as np

import tensorplug as tp
from tensorplug import Tensor

from .. import _functional_pil as F_pil


def _flatten(obj, leaves):
    if isinstance(obj, (list, tuple)):
        return (type(obj), [_flatten(o, leaves) for o in obj])
    if isinstance(obj, dict):
        return (dict, {k: _flatten(v, leaves) for k, v in obj.items()})
    leaves.append(obj)
    return len(leaves) - 1


def _rebuild(spec, leaves):
    if isinstance(spec, int):
        return leaves[spec]
    kind, body = spec
    if kind is dict:
        return {k: _rebuild(v, leaves) for k, v in body.items()}
    items = [_rebuild(s, leaves) for s in body]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def apply_to_images(fn, inputs, tensors_only=False):
    """fn applied to each image of the sample `inputs` (the positional arguments of the call)."""
    sample = inputs if len(inputs) > 1 else inputs[0]
    leaves = []
    spec = _flatten(sample, leaves)
    pil = [i for i, v in enumerate(leaves) if F_pil.is_pil(v)]
    tensors = [i for i, v in enumerate(leaves) if isinstance(v, Tensor)]
    arrays = [i for i, v in enumerate(leaves) if isinstance(v, np.ndarray)]
    targets = tensors if tensors_only else (pil or tensors or arrays)
    if not targets and not tensors_only:
        raise TypeError(f"v2 transform: found no image (PIL Image or Tensor) in the input sample of types "
                        f"{[type(v).__name__ for v in leaves]}")
    state = tp.get_rng_state() if len(targets) > 1 else None
    for n, i in enumerate(targets):
        if state is not None and n:
            tp.set_rng_state(state)         # the same random parameters for every image of the sample
        leaves[i] = fn(leaves[i])
    return _rebuild(spec, leaves)
