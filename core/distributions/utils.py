"""Helpers shared by the distribution families: argument broadcasting, the probs/logits duality,
cached properties and the packing of lower-triangular matrices (torch.distributions.utils)."""
from __future__ import annotations

import math
from numbers import Number

import tensorplug as tp
from tensorplug.tensor import Tensor

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni, used by Gumbel and others


def broadcast_all(*values):
    """Broadcast numbers and tensors together; numbers take the dtype and device of the first tensor
    (the default dtype when there is none), so `Normal(0., scale)` follows `scale`."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        opts = ({"dtype": tp.get_default_dtype()} if like is None
                else {"dtype": like.dtype, "device": like.device})
        values = [v if isinstance(v, Tensor) else tp.tensor(v, **opts) for v in values]
    return tp.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return tp.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions (the event dimensions of an Independent)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Logits -> probabilities: a sigmoid for Bernoulli-like families, a softmax over the last
    dimension (unnormalised log-probabilities) otherwise."""
    if is_binary:
        return tp.sigmoid(logits)
    return tp.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Keep probabilities inside (0, 1) by one machine epsilon, so their logs stay finite."""
    eps = tp.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Probabilities -> logits (log-odds when binary, log-probabilities otherwise)."""
    p = clamp_probs(probs)
    if is_binary:
        return tp.log(p) - tp.log1p(-p)
    return tp.log(p)


class _lazy_property_and_property(property):
    """What a lazy_property looks like on the class: a property, so code that inspects the class
    (constraint checks, documentation) sees an attribute and not a bare function."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


class lazy_property:
    """A property computed once per instance and then stored in its __dict__ (so `probs` or
    `logits`, whichever was not given, costs nothing until used). It is computed with grad mode on,
    as the stored value must carry the graph to the parameters even if first read under no_grad."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = getattr(wrapped, "__doc__", None)
        self.__name__ = getattr(wrapped, "__name__", None)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with tp.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_mask(n, diag, device):
    idx = tp.arange(n, device=device)
    return idx < idx.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (diagonals up to `diag`) of the last two dims, row by row, as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """Inverse of tril_matrix_to_vec: a D x D matrix whose lower triangle holds `vec`."""
    m = vec.shape[-1]
    # D solves D (D + 1 + 2 diag) / 2 - diag (diag + 1) / 2 ... written as the root of a quadratic
    n = (-(1 + 2 * diag) + math.sqrt((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))) / 2
    if abs(round(n) - n) > tp.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
