"""Distance ops of nn.functional: normalize, cosine_similarity, pairwise_distance, pdist,
cosine_embedding helpers and one_hot. All are composed of differentiable Tensor ops."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ._core import Tensor, broadcast_shapes, wrap_dim


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps) along `dim`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"normalize(): argument 'input' must be Tensor, not {type(input).__name__}")
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    r = input / denom
    if out is not None:
        out.copy_(r)
        return out
    return r


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along `dim` (x1, x2 broadcast)."""
    if _amp.on:
        return _amp.run("cosine_similarity", cosine_similarity, (x1, x2, dim, eps))
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise TypeError("cosine_similarity(): arguments 'x1' and 'x2' must be Tensors")
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    if tuple(x1.shape) != shape:
        x1 = x1.expand(*shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(*shape)
    d = wrap_dim(dim, len(shape))
    n1 = x1.norm(2, d, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, d, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(d)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dimension (x1, x2 broadcast)."""
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise TypeError("pairwise_distance(): arguments 'x1' and 'x2' must be Tensors")
    nd = max(x1.ndim, x2.ndim)
    if nd == 0:
        return (x1 - x2 + eps).abs() if p != 0 else ((x1 - x2 + eps) != 0).to(x1.dtype)
    return (x1 - x2 + eps).norm(p, nd - 1, keepdim=keepdim)


def pdist(input, p=2):
    """The p-norm distances between every pair of rows i < j of an (N, M) input, as a
    vector of N (N - 1) / 2 entries (row-major over the upper triangle)."""
    if _amp.on:
        return _amp.run("pdist", pdist, (input, p))
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    from .creation import tensor
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    ii = tensor(i.astype(np.int64), dtype=_dt.int64, device=input.device)
    jj = tensor(j.astype(np.int64), dtype=_dt.int64, device=input.device)
    diff = input.index_select(0, ii) - input.index_select(0, jj)
    return diff.norm(p, 1)


def one_hot(tensor, num_classes=-1):
    """An int64 tensor of shape tensor.shape + (num_classes,), 1 at each value's class
    (num_classes -1: max value + 1)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' must be Tensor, not {type(tensor).__name__}")
    if tensor._dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    from .creation import arange
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        mn = mx = 0
    else:
        mn, mx = int(tensor.min()), int(tensor.max())
    if mn < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = mx + 1
    elif num_classes < -1:
        raise RuntimeError("num_classes should be positive (or -1 to infer it)")
    elif tensor.numel() and mx >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, dtype=_dt.int64, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(_dt.int64)


FUNCTIONAL = ["normalize", "cosine_similarity", "pairwise_distance", "pdist", "one_hot"]
