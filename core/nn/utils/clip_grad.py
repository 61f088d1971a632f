"""Gradient clipping: clip_grad_norm_ (rescale all gradients so their joint norm is at most
max_norm) and clip_grad_value_ (clamp each gradient element)."""
from __future__ import annotations

import math
import warnings

from ... import dtypes as _dt
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads_of(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (as if they were concatenated into one vector)."""
    from ...ops.creation import tensor
    from ...ops.linalg import vector_norm
    from ...ops.shape import stack
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    else:
        tensors = [t for t in tensors if t is not None]
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tensor(0.0)
    with no_grad():
        norms = [vector_norm(g, norm_type) for g in tensors]
        dt = norms[0].dtype
        for n in norms[1:]:
            dt = _dt.promote_types(dt, n.dtype)
        dev = norms[0].device
        total_norm = vector_norm(stack([n.to(device=dev, dtype=dt) for n in norms]), norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)) in place."""
    grads = _grads_of(parameters)
    if not grads:
        return
    max_norm = float(max_norm)
    with no_grad():
        clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(device=g.device, dtype=g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescale the gradients of `parameters` in place so that their total norm (the norm of all of
    them concatenated, order `norm_type`, inf allowed) is at most max_norm. Returns the total norm
    before clipping (a 0-d tensor). Non-finite norms raise only with error_if_nonfinite=True."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)
    grads = _grads_of(parameters)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element of `parameters` to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads_of(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
