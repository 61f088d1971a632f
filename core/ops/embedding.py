"""Embedding ops of nn.functional: embedding and embedding_bag.

`embedding` looks rows of a weight matrix up; its gradient scatter-adds into the rows (none into
padding_idx's). `embedding_bag` reduces the rows of each bag (sum, mean or max) with the backend's
`embedding_bag` kernel (native, or its decomposition in tensorplug.dispatch.optional_norm): bags are
segments of one flat index tensor, reduced without a Python loop per bag. Both gradients are
written in Tensor ops (index_select / index_add / gather), so they can be differentiated again.

    >>> w = tensorplug.randn(10, 3)
    >>> F.embedding(tensorplug.tensor([[1, 2], [4, 5]]), w).shape        # (2, 2, 3)
    >>> F.embedding_bag(tensorplug.tensor([1, 2, 4, 5, 4]), w, tensorplug.tensor([0, 2]))   # (2, 3)
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd import grad_mode
from ._core import Tensor, _gstate, _make, check_same_device, record


def _check_index(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {input.dtype!r} instead (while checking arguments "
                           f"for {name})")


def _padding_idx(padding_idx, num):
    if padding_idx is None:
        return None
    if not -num <= padding_idx < num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num if padding_idx < 0 else padding_idx


def _renorm_(weight, idx, max_norm, norm_type):
    """Rescale, in place and unrecorded, the rows of weight referenced by idx whose norm exceeds
    max_norm, to norm max_norm (PyTorch's embedding_renorm_, with its 1e-7 guard)."""
    from .pointwise import where
    with grad_mode.no_grad():
        rows = idx.reshape(-1).unique()
        if rows.numel() == 0:
            return
        sel = weight.index_select(0, rows)
        norms = sel.abs().pow(norm_type).sum(1, keepdim=True).pow(1.0 / norm_type)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).to(weight.dtype)
        weight.index_copy_(0, rows, sel * scale)


def _zero_padding_row(gw, padding_idx):
    if padding_idx is None:
        return gw
    from .pointwise import where
    from .creation import arange
    keep = (arange(gw.shape[0], device=gw.device) != padding_idx).reshape(-1, 1)
    return where(keep, gw, gw.new_zeros(()))


def _freq(idx, num):
    """How many times each of the rows 0..num-1 occurs in idx (1-d int64), as a tensor."""
    return idx.new_zeros(num).index_add(0, idx, idx.new_ones(idx.shape[0]))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of weight (V, D) at the indices in input (any shape): output input.shape + (D,).
    padding_idx's row gets no gradient; with max_norm, referenced rows whose norm exceeds it are
    renormalized in place first; scale_grad_by_freq divides each row's gradient by how many times it
    occurs in input."""
    _check_index(input, "embedding")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = weight.shape[0]
    padding_idx = _padding_idx(padding_idx, num)
    k = weight._k
    if max_norm is None and input._k is k and input._dtype is _dt.int64:
        # the lookup as kernel calls: a frontend reshape / index_select / reshape cost 31 us against
        # PyTorch's 8 for makemore's (32, 16) indices, 16 lookups a step
        from .indexing import _norm_index, _oob_rt
        idd = _norm_index(k, k["reshape"](input._data, (-1,)), num, 0, negative=False, err=_oob_rt)
        idx = _make(idd, _dt.int64, k, input._dev)
        rows = k["index"](weight._data, (idd,))
        out = _make(k["reshape"](rows, tuple(input._data.shape) + (weight._data.shape[1],)), weight._dtype, k,
                    weight._dev)
    else:
        idx = input.reshape(-1)
        if idx.dtype is not _dt.int64:
            idx = idx.long()
        if max_norm is not None:
            _renorm_(weight, idx, max_norm, norm_type)
        with grad_mode.no_grad():
            rows = weight.index_select(0, idx)
        out = rows.reshape(tuple(input.shape) + (weight.shape[1],))
    if _gstate.enabled and weight._rg:
        freq = _freq(idx, num) if scale_grad_by_freq else None
        shape = tuple(weight.shape)

        def vjp(g):
            g2 = g.reshape(-1, shape[1])
            if freq is not None:
                g2 = g2 / freq.index_select(0, idx).to(g2.dtype).reshape(-1, 1)
            if not _gstate.enabled and idx._k is g2._k:   # no graph of the backward: the fused segment sum
                k = g2._k
                return (_make(k["embedding_backward"](g2._data, idx._data, shape[0], padding_idx),
                              g2._dtype, k, g2._dev),)
            gw = g2.new_zeros(shape).index_add(0, idx, g2)
            return (_zero_padding_row(gw, padding_idx),)
        record("EmbeddingBackward0", out, (weight,), vjp)
    return out


_MODES = ("sum", "mean", "max")


def _bag_ids(offsets, n):
    """The bag of each of n elements, given the bags' start offsets (cumsum of start marks)."""
    marks = offsets.new_zeros(n + 1).index_add(0, offsets, offsets.new_ones(offsets.shape[0]))
    return marks.cumsum(0).narrow(0, 0, n) - 1


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embedding rows, without materializing the per-element rows
    as an output. input is 2-D (B, L: B bags of L indices) or 1-D with `offsets` (the start of each
    bag; with include_last_offset the last offset ends the last bag). per_sample_weights (mode
    'sum') scales each element's row; elements equal to padding_idx are left out of their bag (and
    of its count for 'mean'); empty bags give zeros. Returns (B, D)."""
    _check_index(input, "embedding_bag")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if mode not in _MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is "
                                      f"only supported for mode='sum' (got mode='{mode}'). Please open a "
                                      "feature request on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not "
                             f"None, then it must have the same shape as the input ({list(input.shape)})")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    num, dim = weight.shape
    padding_idx = _padding_idx(padding_idx, num)
    from .creation import arange, tensor
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                             "of fixed length sequences.")
        b, length = input.shape
        idx = input.reshape(-1)
        offsets = arange(0, b * length, length if length else 1, dtype=_dt.int64, device=input.device) \
            if length else idx.new_zeros(b)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if not isinstance(offsets, Tensor):
            offsets = tensor(offsets, dtype=_dt.int64, device=input.device)
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        idx = input
        offsets = offsets.long()
        n = idx.shape[0]
        if include_last_offset:
            if offsets.shape[0] == 0:
                raise ValueError("include_last_offset: number of offsets should be at least 1")
            end = int(offsets[-1].item())
            offsets = offsets.narrow(0, 0, offsets.shape[0] - 1)
            if end < n:                              # elements past the last offset belong to no bag
                idx = idx.narrow(0, 0, end)
                if per_sample_weights is not None:
                    per_sample_weights = per_sample_weights.narrow(0, 0, end)
        _check_offsets(offsets, idx.shape[0])
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if idx.dtype is not _dt.int64:
        idx = idx.long()
    if padding_idx is not None:
        idx, offsets, per_sample_weights = _drop_padding(idx, offsets, per_sample_weights, padding_idx)
    if max_norm is not None:
        _renorm_(weight, idx, max_norm, norm_type)
    return _bag_reduce(weight, idx, offsets, per_sample_weights, mode, scale_grad_by_freq)


def _check_offsets(offsets, n):
    if offsets.shape[0] == 0:
        return
    o = offsets._host()
    if o[0] != 0:
        raise ValueError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                         f"from position 0. However, got {int(o[0])}")
    if (o[1:] < o[:-1]).any() or o[-1] > n:
        raise ValueError(f"offsets must be non-decreasing and at most the number of indices ({n})")


def _drop_padding(idx, offsets, psw, padding_idx):
    """Remove the elements equal to padding_idx, shifting the offsets (vectorised, no loop per bag)."""
    from .shape import cat
    pad = idx == padding_idx
    removed_before = cat([idx.new_zeros(1), pad.long().cumsum(0)])       # pads among idx[:i]
    offsets = offsets - removed_before.index_select(0, offsets)
    keep = ~pad
    idx = idx.masked_select(keep)
    if psw is not None:
        psw = psw.masked_select(keep)
    return idx, offsets, psw


def _bag_reduce(weight, idx, offsets, psw, mode, scale_grad_by_freq):
    check_same_device(weight, idx, offsets, *(() if psw is None else (psw,)))
    k, dt = weight._k, weight._dtype
    b = offsets.shape[0]
    n = idx.shape[0]
    wd = None if psw is None else (psw if psw._dtype is dt else psw.to(dt))._data
    od, cd, ad = k["embedding_bag"](weight._data, idx._data, offsets._data, wd, mode)
    count = _make(cd, _dt.int64, k, weight._dev)
    if mode == "max":
        # out[b, j] = weight[idx[arg[b, j]], j]: a gather, differentiable to any order
        arg = _make(ad, _dt.int64, k, weight._dev)
        out = _make(od, dt, k, weight._dev)
        if _gstate.enabled and weight._rg:
            if n == 0:
                return record("EmbeddingBagBackward0", out, (weight,), lambda g: (weight.detach() * 0,))
            from .pointwise import where
            rows = idx.index_select(0, arg.reshape(-1)).reshape(b, -1)
            out = where((count > 0).reshape(-1, 1), weight.gather(0, rows), out)
        return out
    out = _make(od, dt, k, weight._dev)
    need_w = weight._rg
    need_p = psw is not None and psw._rg
    if not (_gstate.enabled and (need_w or need_p)):
        return out
    if n == 0:                                  # every bag empty: zero gradients
        ins = tuple(t for t in (weight, psw) if t is not None)
        return record("EmbeddingBagBackward0", out, ins, lambda g: tuple(t.detach() * 0 for t in ins))
    num = weight.shape[0]
    freq = _freq(idx, num) if scale_grad_by_freq else None
    ins = (weight,) if psw is None else (weight, psw)

    def vjp(g):
        bag = _bag_ids(offsets, n)
        gb = g.index_select(0, bag)                                        # (n, D): each element's bag grad
        if mode == "mean":
            gb = gb / count.clamp(min=1).to(gb.dtype).index_select(0, bag).reshape(-1, 1)
        gw = gp = None
        if need_w:
            src = gb if psw is None else gb * psw.to(gb.dtype).reshape(-1, 1)
            if freq is not None:
                src = src / freq.index_select(0, idx).to(gb.dtype).reshape(-1, 1)
            gw = gb.new_zeros(tuple(weight.shape)).index_add(0, idx, src)
        if need_p:
            gp = (gb * weight.index_select(0, idx)).sum(1).to(psw.dtype)
        return (gw,) if psw is None else (gw, gp)
    record("EmbeddingBagBackward0", out, ins, vjp, saved=ins)
    return out


FUNCTIONAL = ["embedding", "embedding_bag"]
