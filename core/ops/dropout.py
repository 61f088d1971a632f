"""Dropout ops of nn.functional: dropout dropout1d dropout2d dropout3d alpha_dropout
feature_alpha_dropout.

In training, each element (or, for the channel-wise variants, each whole channel) is zeroed with
probability p and the survivors are scaled by 1 / (1 - p), so the expectation is unchanged; in
eval they return the input itself. The mask is drawn from the device's default generator (seeded
by tensorplug.manual_seed); the output is input * mask, so gradients of any order flow through it.

    >>> y = F.dropout(tensorplug.ones(1000), p=0.2)   # about 200 zeros, the rest 1.25
"""
from __future__ import annotations

import math
import warnings

from ._core import Tensor, _gstate, check_inplace, commit_inplace, snapshot

# SELU's negative saturation value: -scale * alpha
_ALPHA_SELU = 1.7580993408473766


def _check(input, p, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, shape, p):
    """1.0 with probability 1 - p, else 0.0, in input's dtype, of the given shape."""
    from .random import rand
    u = rand(*shape, dtype=input.dtype, device=input.device)
    return (u >= p).to(input.dtype)


def _apply(input, fn, inplace):
    if not inplace:
        return fn(input)
    check_inplace(input)
    src = snapshot(input) if (input._rg and _gstate.enabled) else input
    return commit_inplace(input, fn(src))


def _dropout(input, p, training, inplace, mask_shape, name):
    _check(input, p, name)
    if not training or p == 0.0:
        return input
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating-point input, got {input.dtype!r}")
    if p == 1.0:
        return _apply(input, lambda x: x * 0.0, inplace)
    mask = _keep_mask(input, mask_shape, p) * (1.0 / (1.0 - p))
    return _apply(input, lambda x: x * mask, inplace)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the others by 1 / (1 - p) (identity in eval)."""
    return _dropout(input, p, training, inplace, tuple(input.shape), "dropout")


def _feature_shape(input, batched_ndim, name):
    """Mask shape for channel-wise dropout: (N, C, 1, ...) batched, (C, 1, ...) unbatched."""
    nd = input.ndim
    shape = tuple(input.shape)
    if nd == batched_ndim:
        return shape[:2] + (1,) * (nd - 2)
    return shape[:1] + (1,) * (nd - 1)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) input with probability p; scale by 1 / (1 - p)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note "
                           "that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                           "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
                           "inputs).")
    return _dropout(input, p, training, inplace, _feature_shape(input, 3, "dropout1d"), "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p; scale by 1 / (1 - p).
    A 3-D input is read as (N, C, L) (PyTorch's behaviour, with its warning)."""
    nd = input.ndim
    if nd not in (3, 4):
        warnings.warn(f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this "
                      "warning, please use dropout instead. Note that dropout2d exists to provide "
                      "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
                      "and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
                      "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
                      "the channel dim. This behavior will change in a future release to interpret the "
                      "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
                      "channel-wise dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    shape = tuple(input.shape)
    mask_shape = shape[:2] + (1,) * (nd - 2) if nd >= 2 else shape
    return _dropout(input, p, training, inplace, mask_shape, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    nd = input.ndim
    if nd not in (4, 5):
        warnings.warn(f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this "
                      "warning, please use dropout instead. Note that dropout3d exists to provide "
                      "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
                      "and an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _dropout(input, p, training, inplace, _feature_shape(input, 5, "dropout3d"), "dropout3d")


def _alpha(input, p, training, inplace, mask_shape, name):
    _check(input, p, name)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply(input, lambda x: x * 0.0, inplace)
    # kept: a * x + c; dropped: a * (-alpha') + c, with c = alpha' * a * p; mean 0 / var 1 preserved
    a = 1.0 / math.sqrt((_ALPHA_SELU * _ALPHA_SELU * p + 1) * (1 - p))
    keep = _keep_mask(input, mask_shape, p)
    shift = (keep - 1) * (_ALPHA_SELU * a) + _ALPHA_SELU * a * p
    scale = keep * a
    return _apply(input, lambda x: x * scale + shift, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped elements take SELU's saturation value, then an affine map
    restores the input's mean and variance (for zero-mean, unit-variance input)."""
    return _alpha(input, p, training, inplace, tuple(input.shape), "alpha_dropout")


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels (dim 1) of batched input (N, C, *)."""
    shape = tuple(input.shape)
    mask_shape = shape[:2] + (1,) * (len(shape) - 2) if len(shape) >= 2 else shape
    return _alpha(input, p, training, inplace, mask_shape, "feature_alpha_dropout")


FUNCTIONAL = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
