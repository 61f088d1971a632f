"""Shape, view and joining ops: reshape view expand permute transpose squeeze unsqueeze flatten
cat stack chunk split narrow flip roll repeat ... Views alias their base's memory."""
from __future__ import annotations

from ._core import Tensor, _gstate, _make, record, wrap_dim


def make_view(base, data):
    """A tensor over `data`, an aliasing view of base's array: shares base's version counter."""
    t = _make(data, base._dtype, base._k, base._dev)
    if base._ver is None:
        base._ver = [0]
    t._ver = base._ver
    t._base = base._base if base._base is not None else base
    return t


def _infer_shape(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
    return tuple(shape)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def reshape(input, *shape):
    """A tensor with the same data in `shape` (-1 infers one size); a view when contiguous."""
    shape = _infer_shape(_shape_args(shape), input.numel())
    old = input._data.shape
    if shape == old:
        return _alias(input)
    r = make_view(input, input._k["reshape"](input._data, shape))
    if input._rg and _gstate.enabled:
        record("ViewBackward0", r, (input,), lambda g: (g.reshape(old),))
    return r


def _alias(input):
    r = make_view(input, input._data)
    if input._rg and _gstate.enabled:
        record("AliasBackward0", r, (input,), lambda g: (g,))
    return r


def expand(input, *sizes):
    """A broadcast view: size -1 keeps a dimension; new leading dimensions may be added."""
    sizes = _shape_args(sizes)
    old = input._data.shape
    if len(sizes) < len(old):
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal "
                           f"to the number of dimensions in the tensor ({len(old)})")
    lead = len(sizes) - len(old)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension ({i})")
            target.append(s)
        else:
            o = old[i - lead]
            if s == -1:
                s = o
            elif o != s and o != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({o}) "
                                   f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor "
                                   f"sizes: {list(old)}")
            target.append(s)
    target = tuple(target)
    if target == old:
        return _alias(input)
    r = make_view(input, input._k["broadcast_to"](input._data, target))
    if input._rg and _gstate.enabled:
        from ._core import sum_to
        record("ExpandBackward0", r, (input,), lambda g: (sum_to(g, old),))
    return r


def permute(input, *dims):
    dims = _shape_args(dims)
    n = input.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = {n} is not "
                           f"equal to len(dims) = {len(dims)}")
    axes = tuple(wrap_dim(d, n) for d in dims)
    if len(set(axes)) != n:
        raise RuntimeError(f"permute(): duplicate dims are not allowed: {list(dims)}")
    r = make_view(input, input._k["permute"](input._data, axes))
    if input._rg and _gstate.enabled:
        inv = [0] * n
        for i, a in enumerate(axes):
            inv[a] = i
        record("PermuteBackward0", r, (input,), lambda g: (g.permute(*inv),))
    return r


def _attach():
    T = Tensor
    T.reshape = reshape
    T.view = reshape
    T.expand = expand
    T.permute = permute


_attach()
PUBLIC = ["reshape", "permute"]
