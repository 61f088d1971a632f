"""Shape, view and joining ops: reshape view expand permute transpose squeeze unsqueeze flatten
cat stack chunk split narrow flip roll repeat diagonal tril triu meshgrid ...

Views (reshape/view when the layout allows, expand, permute, transpose, t, squeeze, unsqueeze,
narrow, select, diagonal and the pieces of split/chunk/unbind) alias their base's memory:
they are made with `make_view`, so writes through a view reach the base and the version
counter is shared. Every other op returns a new tensor. Backward rules are Tensor ops.

    >>> x = tensorplug.arange(6.).reshape(2, 3)
    >>> tensorplug.cat([x, x], dim=1).shape
    tensorplug.Size([2, 6])
    >>> [c.shape[0] for c in tensorplug.arange(7).chunk(3)]
    [3, 3, 1]
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ._core import (Tensor, _gstate, _make, broadcast_all_shapes, check_inplace, check_same_device,
                    commit_inplace, grad_for, record, record_multi, snapshot, sum_to, wrap_dim)
from ._limits import MAX_DIMS, check_ndim


def make_view(base, data, step=None):
    """A tensor over `data`, an aliasing view of base's array: shares base's version counter.
    `step` = (kernel name, args) makes `data` from base's array; the chain of steps from the root
    lets an in-place op on the view rebase the root's history (view_inplace.py)."""
    t = _make(data, base._dtype, base._k, base._dev)
    if base._ver is None:
        base._ver = [0]
    t._ver = base._ver
    root = base._base
    if root is None:
        root = base
        t._vsteps = None if step is None else (step,)
    else:
        chain = base._vsteps
        t._vsteps = None if chain is None or step is None else chain + (step,)
    t._base = root
    if root._rebases:
        t._vgen = root._rebases
    return t


def _view(input, data, name, vjp, step):
    """A view of input over `data` (= kernel step[0] on input's array with args step[1]), recording
    `vjp` (g -> input grad) when input needs grad."""
    r = make_view(input, data, step)
    if input._rg and _gstate.enabled:
        record(name, r, (input,), lambda g: (vjp(g),))
    return r


def _new(input, data, name, vjp):
    """A new (non-aliasing) tensor like input over `data`, recording `vjp` when input needs grad."""
    r = _make(data, input._dtype, input._k, input._dev)
    if input._rg and _gstate.enabled:
        record(name, r, (input,), lambda g: (vjp(g),))
    return r


def _zeros(like, shape):
    """Zeros of `shape` with like's dtype and device (no graph)."""
    return _make(like._k["full"](tuple(shape), 0, like._dtype.name), like._dtype, like._k, like._dev)


_ALIAS = ("alias", ())


def _alias(input):
    r = make_view(input, input._data, _ALIAS)
    if input._rg and _gstate.enabled:
        record("AliasBackward0", r, (input,), lambda g: (g,))
    return r


def _int(x, what="argument"):
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        raise TypeError(f"{what} must be an int, got {type(x).__name__}")
    return x.__index__()


def _dim_list(dims, ndim):
    """dims (int or sequence) as a tuple of wrapped dims; duplicates raise like PyTorch."""
    if not isinstance(dims, (tuple, list)):
        dims = (dims,)
    out = []
    for d in dims:
        w = wrap_dim(d, ndim)
        if w in out:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        out.append(w)
    return tuple(out)


# -- memory layout ------------------------------------------------------------------------------
def _strides(data, itemsize):
    """Element strides of a backend array, or None when the backend does not expose them."""
    s = getattr(data, "strides", None)
    if s is None:
        return None
    try:
        return tuple(int(x) // itemsize for x in s)
    except TypeError:
        return None


def _contiguous_strides(shape, strides):
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def _layout_contiguous(t):
    """True/False when the layout is known (strides or C-contiguity flag), else None."""
    data = t._data
    st = _strides(data, t._dtype.itemsize)
    shape = data.shape
    if st is not None:
        if 0 in shape:
            return True
        return _contiguous_strides(shape, st)
    flags = getattr(data, "flags", None)
    if flags is not None:
        c = getattr(flags, "c_contiguous", None)
        if c is None:
            try:
                c = flags["C_CONTIGUOUS"]
            except (KeyError, TypeError, IndexError):
                c = None
        if c is not None:
            return bool(c)
    return None


def _can_view(oldshape, oldstride, newshape) -> bool:
    """PyTorch's computeStride: can `newshape` be a view over an array of this shape/strides?"""
    if not oldshape:
        return True
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0:
        return True
    view_d = len(newshape) - 1
    chunk_base = oldstride[-1]
    tensor_numel = view_numel = 1
    for td in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[td]
        if td == 0 or (oldshape[td - 1] != 1 and oldstride[td - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if td > 0:
                chunk_base = oldstride[td - 1]
                tensor_numel = view_numel = 1
    return view_d == -1


def _viewable(t, shape):
    """True if t can be viewed as `shape`, False if not, None if the backend hides its layout."""
    st = _strides(t._data, t._dtype.itemsize)
    if st is not None:
        return _can_view(t._data.shape, st, shape)
    return True if _layout_contiguous(t) else None


def is_contiguous(input, memory_format=None) -> bool:
    """True when the elements are laid out in row-major order without gaps (unknown layout: False)."""
    return bool(_layout_contiguous(input))


def contiguous(input, memory_format=None):
    """input itself when it is already C-contiguous, else a contiguous copy."""
    if _layout_contiguous(input):
        return input
    return _new(input, input._k["copy"](input._data), "CloneBackward0", lambda g: g)


# -- reshape and view ---------------------------------------------------------------------------
def _infer_shape(shape, numel):
    if len(shape) > MAX_DIMS:
        check_ndim(len(shape))
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
    return tuple(_int(s, "size") for s in shape)


def reshape(input, *shape):
    """The same data in `shape` (-1 infers one size): a view when the layout allows, else a copy.

    >>> tensorplug.arange(6).reshape(2, -1).shape
    tensorplug.Size([2, 3])
    """
    shape = _infer_shape(_shape_args(shape), input.numel())
    old = input._data.shape
    if shape == old:
        return _alias(input)
    k = input._k
    if _viewable(input, shape):
        return _view(input, k["reshape"](input._data, shape), "ViewBackward0", lambda g: g.reshape(old),
                     ("reshape", (shape,)))
    # not expressible as a view (or the layout is unknown): copy, then reshape the fresh array
    return _new(input, k["reshape"](k["copy"](input._data), shape), "UnsafeViewBackward0",
                lambda g: g.reshape(old))


def _unsafe_view(input, shape):
    """reshape of a tensor nothing else aliases (a fresh op result) without view bookkeeping, as
    PyTorch's _unsafe_view (grad_fn UnsafeViewBackward0)."""
    old = input._data.shape
    return _new(input, input._k["reshape"](input._data, shape), "UnsafeViewBackward0", lambda g: g.reshape(old))


def view(input, *shape, dtype=None):
    """A view of input with `shape`; raises when the strides don't allow one (use reshape).
    `view(dtype)` reinterprets the bytes as another dtype (see view_dtype)."""
    if dtype is not None or (len(shape) == 1 and shape[0].__class__ is _dt.dtype):
        if dtype is not None and shape:
            raise TypeError("view() received an invalid combination of arguments: a shape and dtype=")
        return view_dtype(input, shape[0] if dtype is None else dtype)
    shape = _infer_shape(_shape_args(shape), input.numel())
    old = input._data.shape
    if shape == old:
        return _alias(input)
    if _viewable(input, shape) is False:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _view(input, input._k["reshape"](input._data, shape), "ViewBackward0", lambda g: g.reshape(old),
                 ("reshape", (shape,)))


def view_dtype(input, dtype):
    """input's bytes read as `dtype`, sharing its memory (not differentiable). A different element size
    scales the last dimension, which must then have stride 1 (PyTorch's rules and messages)."""
    if dtype.__class__ is not _dt.dtype:
        raise TypeError(f"view(): argument 'dtype' must be tensorplug.dtype, not {type(dtype).__name__}")
    src = input._dtype
    data, k = input._data, input._k
    if dtype is not src and dtype.itemsize != src.itemsize:
        what = f"to view {src._legacy[:-6]} as {dtype._legacy[:-6]} (different element sizes)"
        shape = data.shape
        if not shape:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        st = _strides(data, src.itemsize) or row_major_strides(shape)
        if st[-1] != 1 and shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {st[-1]}")
        if dtype.itemsize > src.itemsize:
            ratio = dtype.itemsize // src.itemsize
            if shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
            for d, (n, s_) in enumerate(zip(shape[:-1], st[:-1])):
                if s_ % ratio and n != 1:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, but got {s_}")
    from ..storage import numpy_dtype
    npd = numpy_dtype(dtype)
    if hasattr(data, "view") and hasattr(data, "strides"):       # NumPy, CuPy: an aliasing view
        try:
            out = data.view(npd)
        except ValueError as e:
            raise RuntimeError(f"view(): can't view {src.name} as {dtype.name} with this layout ({e})") from None
    else:                                                       # through the host (a copy)
        import numpy as np
        out = k["from_numpy"](np.asarray(k["to_numpy"](data)).view(npd))
    r = make_view(input, out, None)
    r._dtype = dtype
    return r


def row_major_strides(shape) -> tuple:
    """Element strides of a contiguous (row-major) tensor of `shape`."""
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


def view_as(input, other):
    return view(input, tuple(other.shape))


def reshape_as(input, other):
    return reshape(input, tuple(other.shape))


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (a view when the layout allows).

    >>> tensorplug.zeros(2, 3, 4).flatten(1).shape
    tensorplug.Size([2, 12])
    """
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s, e = wrap_dim(start_dim, len(shape)), wrap_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    n = 1
    for x in shape[s:e + 1]:
        n *= x
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


def unflatten(input, dim, sizes):
    """Split dim into `sizes` (one may be -1): unflatten(dim=1, sizes=(2, 3))."""
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    sizes = tuple(_int(s, "size") for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = shape[d]
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if (-1 in sizes and (known == 0 or n % known)) or (-1 not in sizes and known != n):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                           f"{dim} ({n}) in the input tensor")
    if -1 in sizes:
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    return reshape(input, shape[:d] + sizes + shape[d + 1:])


def ravel(input):
    """A contiguous 1-D tensor with input's elements (a view when input is contiguous)."""
    return reshape(input, -1)


# -- broadcasting views ---------------------------------------------------------------------------
def expand(input, *sizes):
    """A broadcast view: size -1 keeps a dimension; new leading dimensions may be added."""
    sizes = _shape_args(sizes)
    old = input._data.shape
    if len(sizes) > MAX_DIMS:
        check_ndim(len(sizes))
    if len(sizes) < len(old):
        raise RuntimeError(f"expand(size={list(sizes)}): the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor ({len(old)})")
    lead = len(sizes) - len(old)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            target.append(s)
        else:
            o = old[i - lead]
            if s == -1:
                s = o
            elif o != s and (o != 1 or s < 0):
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({o}) "
                                   f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor "
                                   f"sizes: {list(old)}")
            target.append(s)
    target = tuple(target)
    if target == old:
        return _alias(input)
    return _view(input, input._k["broadcast_to"](input._data, target), "ExpandBackward0",
                 lambda g: sum_to(g, old), ("broadcast_to", (target,)))


def expand_as(input, other):
    return expand(input, tuple(other.shape))


def broadcast_to(input, size):
    """input broadcast to `size` (a view), like expand."""
    return expand(input, tuple(size))


def broadcast_tensors(*tensors):
    """All tensors expanded (as views) to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = _tensor_list(tensors, "broadcast_tensors")
    shape = broadcast_all_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


# -- permutations -------------------------------------------------------------------------------
def permute(input, *dims):
    """A view with dims reordered: permute(2, 0, 1)."""
    dims = _shape_args(dims)
    n = input.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = {n} is not "
                           f"equal to len(dims) = {len(dims)}")
    axes = tuple(wrap_dim(d, n) for d in dims)
    if len(set(axes)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inv = [0] * n
    for i, a in enumerate(axes):
        inv[a] = i
    return _view(input, input._k["permute"](input._data, axes), "PermuteBackward0", lambda g: g.permute(*inv),
                 ("permute", (axes,)))


def transpose(input, dim0, dim1):
    """A view with dims dim0 and dim1 swapped."""
    n = input.ndim
    a, b = wrap_dim(dim0, n), wrap_dim(dim1, n)
    axes = list(range(n))
    axes[a], axes[b] = axes[b], axes[a]
    return _view(input, input._k["permute"](input._data, tuple(axes)), "TransposeBackward0",
                 lambda g: g.transpose(a, b), ("permute", (tuple(axes),)))


swapaxes = swapdims = transpose


def t(input):
    """Transpose of a 2-D tensor (a view); 0-D and 1-D tensors are returned as they are."""
    n = input.ndim
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return transpose(input, 0, 1) if n == 2 else _alias(input)


def _T(self):
    return permute(self, *range(self.ndim - 1, -1, -1))


def _mT(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _H(self):
    if self.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return _T(self).conj()          # (conj: free for real tensors)


def _mH(self):
    if self.ndim == 0:
        return _alias(self).conj()
    return _mT(self).conj()


def _move_order(source, destination, n, fn="movedim"):
    src = source if isinstance(source, (list, tuple)) else (source,)
    dst = destination if isinstance(destination, (list, tuple)) else (destination,)
    if len(src) != len(dst):
        raise RuntimeError(f"{fn}: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    s = [wrap_dim(d, n) for d in src]
    d = [wrap_dim(x, n) for x in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"{fn}: repeated dim in `source` ({list(src)})")
    if len(set(d)) != len(d):
        raise RuntimeError(f"{fn}: repeated dim in `destination` ({list(dst)})")
    order = [-1] * n
    for a, b in zip(s, d):
        order[b] = a
    rest = iter(i for i in range(n) if i not in s)
    for i in range(n):
        if order[i] == -1:
            order[i] = next(rest)
    return order


def movedim(input, source, destination):
    """Move dim(s) `source` to position(s) `destination`, keeping the other dims in order (a view)."""
    return permute(input, *_move_order(source, destination, input.ndim))


moveaxis = movedim


# -- squeeze / unsqueeze ------------------------------------------------------------------------------
def squeeze(input, dim=None):
    """A view without size-1 dims (all of them, or those of `dim`: an int or a tuple)."""
    shape = input._data.shape
    n = len(shape)
    if dim is None:
        drop = {i for i, s in enumerate(shape) if s == 1}
    else:
        drop = {d for d in _dim_list(dim, n) if n and shape[d] == 1}
    if not drop:
        return _alias(input)
    # the trailing Ellipsis keeps an all-int key a (0-d) view instead of a scalar copy
    key = tuple(0 if i in drop else slice(None) for i in range(n)) + (Ellipsis,)
    return _view(input, input._k["slice"](input._data, key), "SqueezeBackward0", lambda g: g.reshape(shape),
                 ("slice", (key,)))


def unsqueeze(input, dim):
    """A view with a size-1 dim inserted at `dim` (in [-ndim-1, ndim])."""
    shape = input._data.shape
    d = wrap_dim(dim, len(shape) + 1)
    if len(shape) >= MAX_DIMS:
        check_ndim(len(shape) + 1)
    key = (slice(None),) * d + (None,)
    return _view(input, input._k["slice"](input._data, key), "UnsqueezeBackward0", lambda g: g.reshape(shape),
                 ("slice", (key,)))


# -- slicing views ------------------------------------------------------------------------------------
def _pad_along(g, dim, before, after):
    """g with `before`/`after` zeros around it along dim (differentiable: a cat)."""
    if before == 0 and after == 0:
        return g
    parts = []
    shape = list(g._data.shape)
    if before:
        shape[dim] = before
        parts.append(_zeros(g, shape))
    parts.append(g)
    if after:
        shape[dim] = after
        parts.append(_zeros(g, shape))
    return cat(parts, dim)


def narrow(input, dim, start, length):
    """A view of `length` entries of dim starting at `start` (negative start counts from the end)."""
    shape = input._data.shape
    if not shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    start, length = _int(start, "start"), _int(length, "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start < -n or start > n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    after = n - start - length
    return _view(input, input._k["slice"](input._data, key), "NarrowBackward0",
                 lambda g: _pad_along(g, d, start, after), ("slice", (key,)))


def select(input, dim, index):
    """A view of input at `index` along dim, with that dim removed."""
    shape = input._data.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    i = _int(index, "index")
    if i < -n or i >= n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(shape)} at dimension {d}")
    if i < 0:
        i += n
    key = (slice(None),) * d + (i, Ellipsis)       # Ellipsis: a 0-d result stays a view
    return _view(input, input._k["slice"](input._data, key), "SelectBackward0",
                 lambda g: _pad_along(unsqueeze(g, d), d, i, n - i - 1), ("slice", (key,)))


def unbind(input, dim=0):
    """A tuple of views: input.select(dim, i) for every i."""
    shape = input._data.shape
    if not shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, len(shape))
    return tuple(select(input, d, i) for i in range(shape[d]))


def _pieces(input, d, sizes, name="SplitBackward0"):
    """Views of consecutive pieces along d, with one backward node for all of them: a cat of their
    gradients (zeros for pieces that got none), where a node per piece padded each gradient back to
    the input's size and summed them (a GPT's q, k, v split and its backward: 199 against 324 us)."""
    k, data = input._k, input._data
    out, off = [], 0
    for s in sizes:
        key = (slice(None),) * d + (slice(off, off + s),)
        out.append(make_view(input, k["slice"](data, key), ("slice", (key,))))
        off += s
    if input._rg and _gstate.enabled:
        record_multi(name, out, (input,), lambda grads: (cat(list(grads), d),))
    return tuple(out)


def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along dim: all of size `split_size` (the last may be smaller), or
    of the sizes in a list.

    >>> [p.shape[0] for p in tensorplug.arange(5).split([1, 4])]
    [1, 4]
    """
    shape = tensor._data.shape
    if not shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [_int(s, "split size") for s in split_size_or_sections]
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                               f"at dimension {d}), but got split_sizes={sizes}")
        return _pieces(tensor, d, sizes, "SplitWithSizesBackward0")
    size = _int(split_size_or_sections, "split_size")
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    count = max(-(-n // size), 1) if size else 1
    sizes = [size] * (count - 1) + [n - size * (count - 1)]
    return _pieces(tensor, d, sizes)


def split_with_sizes(input, split_sizes, dim=0):
    return split(input, list(split_sizes), dim)


def chunk(input, chunks, dim=0):
    """Split into `chunks` pieces of size ceil(n / chunks) (the last may be smaller; there may be
    fewer pieces than asked). chunk of a length-7 dim into 3 gives sizes 3, 3, 1."""
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    shape = input._data.shape
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:
        return _pieces(input, d, [0] * chunks)
    return split(input, size, d)


def tensor_split(input, indices_or_sections, dim=0):
    """Split into `sections` near-equal pieces (the first n % sections one longer), or at the
    given indices (Python slice semantics between consecutive indices)."""
    shape = input._data.shape
    if not shape:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios._dtype.category != 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have integer dtype, but "
                               f"got {ios._dtype.name}")
        if ios.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.ndim} dims")
        ios = ios.tolist()
    if isinstance(ios, (list, tuple)):
        bounds = [_int(i, "index") for i in ios] + [n]
        out, prev = [], 0
        for b in bounds:
            s, e, _ = slice(prev, b).indices(n)
            out.append(narrow(input, d, s, max(0, e - s)))
            prev = b
        return tuple(out)
    sections = _int(ios, "sections")
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    q, r = divmod(n, sections)
    return _pieces(input, d, [q + 1] * r + [q] * (sections - r))


def _split_family(name, dim, min_dim):
    def fn(input, indices_or_sections):
        if input.ndim < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a "
                               f"tensor with {input.ndim} dimensions!")
        d = 0 if (name == "hsplit" and input.ndim == 1) else dim
        if not isinstance(indices_or_sections, (list, tuple, Tensor)):
            s = _int(indices_or_sections, "sections")
            if s <= 0 or input._data.shape[d] % s:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {input._data.shape[d]} is not divisible by the split_size {s}!")
        return tensor_split(input, indices_or_sections, d)
    fn.__name__ = name
    fn.__doc__ = f"tensor_split along dim {dim} (sections must divide the size evenly)."
    return fn


hsplit = _split_family("hsplit", 1, 1)
vsplit = _split_family("vsplit", 0, 2)
dsplit = _split_family("dsplit", 2, 3)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal `offset` of the (dim1, dim2) planes, placed as the last dim."""
    shape = input._data.shape
    n = len(shape)
    a, b = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset, "offset")
    n1, n2 = shape[a], shape[b]
    length = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    k = input._k
    others = [i for i in range(n) if i not in (a, b)]
    data = None
    st = _strides(input._data, input._dtype.itemsize)
    if length and st is not None:
        # a strided slice of the merged (dim1, dim2) plane: a writable view on every backend whose
        # reshape returns views (the "diagonal" kernel may return a read-only one)
        perm = tuple(others) + (a, b)
        pshape = tuple(shape[i] for i in perm)
        merged = pshape[:-2] + (n1 * n2,)
        if _can_view(pshape, tuple(st[i] for i in perm), merged):
            flat = k["reshape"](k["permute"](input._data, perm), merged)
            first = offset if offset >= 0 else -offset * n2
            key = (Ellipsis, slice(first, first + (length - 1) * (n2 + 1) + 1, n2 + 1))
            data = k["slice"](flat, key)
    if data is None:
        data = k["diagonal"](input._data, offset, a, b)
    return _view(input, data, "DiagonalBackward0",
                 lambda g: movedim(_embed(g, n1, n2, offset), (n - 2, n - 1), (a, b)), ("diagonal", (offset, a, b)))


_diagonal = diagonal


# -- joining ------------------------------------------------------------------------------------------
def _tensor_list(tensors, fn):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{fn}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"{fn}(): expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return tensors


def _write_out(r, out):
    if out is None:
        return r
    from .pointwise import _out
    return _out(r, out)


def cat(tensors, dim=0, *, out=None):
    """Join tensors along an existing dim; dtypes promote like PyTorch; 1-D empty tensors (shape
    (0,)) are skipped, as legacy PyTorch does.

    >>> tensorplug.cat([tensorplug.ones(2, 3), tensorplug.zeros(1, 3)]).shape
    tensorplug.Size([3, 3])
    """
    if _amp.on:
        return _amp.run("cat", cat, (tensors, dim), {"out": out})
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    check_same_device(*tensors)
    dt = tensors[0]._dtype
    for i, x in enumerate(tensors):
        dt = _dt._PROMOTE[dt, x._dtype]
        if not x._data.shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    parts = [(i, x) for i, x in enumerate(tensors) if x._data.shape != (0,)]
    first = tensors[0]
    k = first._k
    if not parts:
        r = _make(k["full"]((0,), 0, dt.name), dt, k, first._dev)
        d, offsets = 0, {}
    else:
        ref = parts[0][1]._data.shape
        nd = len(ref)
        d = wrap_dim(dim, nd)
        offsets, off = {}, 0
        for i, x in parts:
            s = x._data.shape
            if len(s) != nd:
                raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {len(s)}")
            for ax in range(nd):
                if ax != d and s[ax] != ref[ax]:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                       f"{ref[ax]} but got size {s[ax]} for tensor number {i} in the list.")
            offsets[i] = (off, s[d])
            off += s[d]
        datas = [x._data if x._dtype is dt else k["astype"](x._data, dt.name) for _, x in parts]
        r = _make(k["concat"](datas, d), dt, k, first._dev)
    if _gstate.enabled and any(x._rg for x in tensors):
        ins = tuple(tensors)

        def vjp(g):
            grads = []
            for i, x in enumerate(ins):
                if not x._rg:
                    grads.append(None)
                elif i in offsets:
                    o, s = offsets[i]
                    grads.append(grad_for(narrow(g, d, o, s), x))
                else:
                    grads.append(_zeros(x, x._data.shape))
            return tuple(grads)
        record("CatBackward0", r, ins, vjp)
    return _write_out(r, out)


concat = cat


def concatenate(tensors, axis=0, out=None):
    return cat(tensors, axis, out=out)


def stack(tensors, dim=0, *, out=None):
    """Join equal-shaped tensors along a new dim `dim`.

    >>> tensorplug.stack([tensorplug.ones(2, 3), tensorplug.zeros(2, 3)], dim=1).shape
    tensorplug.Size([2, 2, 3])
    """
    if _amp.on:
        return _amp.run("stack", stack, (tensors, dim), {"out": out})
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0]._data.shape
    for i, x in enumerate(tensors[1:], 1):
        if x._data.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at entry 0 and "
                               f"{list(x._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(s0) + 1)
    check_same_device(*tensors)
    first = tensors[0]
    dt = first._dtype
    for x in tensors:
        dt = _dt._PROMOTE[dt, x._dtype]
    # one concat of the arrays reshaped to (..., 1, ...): no view tensors (a DataLoader's collate stacks
    # a batch of small tensors per step; 32 unsqueeze views cost ~25x the concat)
    k = first._k
    datas = [x._data if x._dtype is dt else k["astype"](x._data, dt.name) for x in tensors]
    if d == 0 and s0:       # C order: the concat along dim 0, then split into len(tensors) rows
        data = k["reshape"](k["concat"](datas, 0), (len(datas),) + s0)
    else:
        shape = s0[:d] + (1,) + s0[d:]
        data = k["concat"]([k["reshape"](a, shape) for a in datas], d)
    r = _make(data, dt, k, first._dev)
    if _gstate.enabled and any(x._rg for x in tensors):
        ins = tuple(tensors)

        def vjp(g):
            return tuple(grad_for(select(g, d, i), x) if x._rg else None for i, x in enumerate(ins))
        record("StackBackward0", r, ins, vjp)
    return _write_out(r, out)


def _atleast(nd, ts):
    single = len(ts) == 1 and isinstance(ts[0], Tensor)
    if len(ts) == 1 and isinstance(ts[0], (list, tuple)):
        ts = tuple(ts[0])
    ts = _tensor_list(ts, f"atleast_{nd}d")
    out = []
    for x in ts:
        n = x.ndim
        if n >= nd:
            out.append(x)
        elif nd == 1 or n == 0:
            out.append(reshape(x, (1,) * nd))
        elif nd == 2:
            out.append(unsqueeze(x, 0))
        else:                       # atleast_3d: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)
            out.append(unsqueeze(unsqueeze(x, 0), 2) if n == 1 else unsqueeze(x, 2))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d -> shape (1,)); one tensor in, one out."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims: 0-d -> (1, 1), (n,) -> (1, n)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: 0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast(3, tensors)


def hstack(tensors, *, out=None):
    """cat along dim 1 (dim 0 for 1-D tensors)."""
    ts = atleast_1d(_tensor_list(tensors, "hstack"))
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """cat along dim 0 of the tensors made at least 2-D."""
    return cat(atleast_2d(_tensor_list(tensors, "vstack")), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """cat along dim 2 of the tensors made at least 3-D."""
    return cat(atleast_3d(_tensor_list(tensors, "dstack")), 2, out=out)


def column_stack(tensors, *, out=None):
    """hstack with 0-D and 1-D tensors taken as columns."""
    ts = [reshape(x, (x.numel(), 1)) if x.ndim <= 1 else x for x in _tensor_list(tensors, "column_stack")]
    return hstack(ts, out=out)


# -- reordering and repetition -------------------------------------------------------------------
def flip(input, *dims, **kwargs):
    """A copy with the order of elements reversed along dims: flip(x, [0, 1]) or x.flip(0, 1)."""
    if "dims" in kwargs:
        dims = kwargs.pop("dims")
    if kwargs:
        raise TypeError(f"flip() got unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(dims, tuple) and len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    axes = _dim_list(dims, input.ndim)
    if input.ndim == 0:
        axes = ()           # dim 0 (or -1) of a 0-d tensor names the tensor itself: nothing to reverse
    k = input._k
    data = k["copy"](k["flip"](input._data, axes) if axes else input._data)
    return _new(input, data, "FlipBackward0", lambda g: flip(g, axes))


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


def roll(input, shifts, dims=None):
    """Shift elements circularly along dims (dims None: over the flattened tensor)."""
    sh = tuple(shifts) if isinstance(shifts, (list, tuple)) else (shifts,)
    sh = tuple(_int(s, "shifts") for s in sh)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        return reshape(roll(flatten(input), sh[0], 0), input._data.shape)
    dm = tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)
    if not sh:
        raise RuntimeError("`shifts` required")
    if len(sh) != len(dm):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(dm)}")
    n = input.ndim
    axes = tuple(wrap_dim(d, n) for d in dm)
    k = input._k
    data = input._data
    shape = data.shape
    moved = False
    if input.numel():
        for s, a in zip(sh, axes):
            m = shape[a]
            s %= m
            if s:
                pre = (slice(None),) * a
                data = k["concat"]([k["slice"](data, pre + (slice(m - s, m),)),
                                    k["slice"](data, pre + (slice(0, m - s),))], a)
                moved = True
    if not moved:
        data = k["copy"](data)
    back = tuple(-s for s in sh)
    return _new(input, data, "RollBackward0", lambda g: roll(g, back, axes))


def repeat(input, *sizes):
    """The tensor tiled sizes[i] times along each dim (extra leading sizes add dims).

    >>> tensorplug.tensor([1, 2]).repeat(2, 2).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    reps = _shape_args(sizes)
    shape = input._data.shape
    if len(reps) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           "of tensor")
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    target = tuple(r * s for r, s in zip(reps, padded))
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(target)}: {list(target)}")
    k = input._k
    inter = tuple(x for pair in zip((1,) * len(reps), padded) for x in pair)
    wide = tuple(x for pair in zip(reps, padded) for x in pair)
    data = k["broadcast_to"](k["reshape"](input._data, inter), wide)
    data = k["reshape"](k["copy"](data), target)
    red = tuple(range(0, 2 * len(reps), 2))
    return _new(input, data, "RepeatBackward0",
                lambda g: g.reshape(wide).sum(dim=red).reshape(shape) if red else g.reshape(shape))


def tile(input, *dims):
    """repeat with `dims` padded with leading 1s to input's number of dims."""
    reps = _shape_args(dims)
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated `repeats` times along dim (dim None: over the flattened tensor);
    `repeats` is an int or a tensor with one count per element. With a single tensor argument,
    the indices 0..n-1 repeated by its counts."""
    if repeats is None:
        counts = input
        from .creation import arange
        return repeat_interleave(arange(counts.numel(), device=counts.device), counts, 0)
    if dim is None:
        input, d = flatten(input), 0
    else:
        if input.ndim == 0:
            input = reshape(input, 1)
        d = wrap_dim(dim, input.ndim)
    shape = input._data.shape
    n = shape[d]
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim <= 1 and n != 1:
        repeats = int(repeats.item())
    if not isinstance(repeats, Tensor):
        r = _int(repeats, "repeats")
        if r < 0:
            raise RuntimeError("Repeats must be non-negative")
        wide = shape[:d + 1] + (r,) + shape[d + 1:]
        return _own(reshape(expand(unsqueeze(input, d + 1), wide), shape[:d] + (n * r,) + shape[d + 1:]))
    if repeats.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    counts = [int(c) for c in repeats.tolist()]
    if len(counts) != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{len(counts)} and input.size(0) = {n}")
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    import numpy as np
    k = input._k
    idx = k["from_numpy"](np.repeat(np.arange(n, dtype=np.int64), counts))
    data = k["index"](input._data, (slice(None),) * d + (idx,))

    def vjp(g):
        return cat([p.sum(dim=d, keepdim=True) for p in split(g, counts, d)], d)
    return _new(input, data, "RepeatInterleaveBackward0", vjp)


def _own(t):
    """A composite's result that must not alias its input: copied when it is a view."""
    if t._base is None:
        return t
    return _new(t, t._k["copy"](t._data), "CloneBackward0", lambda g: g)


# -- diagonals and triangles -----------------------------------------------------------------------
def _embed(v, rows, cols, offset):
    """(..., L) -> (..., rows, cols) with v[..., i] at (i + max(-offset, 0), i + max(offset, 0)),
    zeros elsewhere; built with differentiable ops (cat, narrow, reshape)."""
    batch = tuple(v._data.shape[:-1])
    L = v._data.shape[-1]
    r0, c0 = max(-offset, 0), max(offset, 0)
    if L == 0 or rows == 0 or cols == 0:
        return _zeros(v, batch + (rows, cols))
    nb = len(batch)
    # [v_i, 0 * L] rows flattened and cut to L*L elements puts v_i at (i, i)
    w = cat([unsqueeze(v, -1), _zeros(v, batch + (L, L))], nb + 1)
    w = reshape(narrow(reshape(w, batch + (L * (L + 1),)), nb, 0, L * L), batch + (L, L))
    w = _pad_along(w, nb, r0, rows - L - r0)
    return _pad_along(w, nb + 1, c0, cols - L - c0)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose (dim1, dim2) planes have input's last dim on diagonal `offset`, zeros elsewhere."""
    n = input.ndim + 1
    a, b = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset, "offset")
    m = input._data.shape[-1] + abs(offset)
    return movedim(_embed(input, m, m, offset), (n - 2, n - 1), (a, b))


def diag(input, diagonal=0):
    """1-D input: a square matrix with input on diagonal `diagonal`; 2-D input: that diagonal (a copy)."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        d = _diagonal(input, diagonal)
        return _new(d, d._k["copy"](d._data), "CloneBackward0", lambda g: g)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def _tri(input, diagonal, lower, name, node):
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    diagonal = _int(diagonal, "diagonal")
    k = input._k
    n, m = input._data.shape[-2:]
    rows = k["reshape"](k["arange"](0, n, 1, "int64"), (n, 1))
    cols = k["reshape"](k["arange"](0, m, 1, "int64"), (1, m))
    diff = k["sub"](cols, rows)              # j - i
    mask = k["le"](diff, diagonal) if lower else k["ge"](diff, diagonal)
    data = k["where"](mask, input._data, k["full"]((), 0, input._dtype.name))
    fn = tril if lower else triu
    return _new(input, data, node, lambda g: fn(g, diagonal))


def tril(input, diagonal=0):
    """The lower triangle (j - i <= diagonal) of the last two dims; zeros above."""
    return _tri(input, diagonal, True, "tril", "TrilBackward0")


def triu(input, diagonal=0):
    """The upper triangle (j - i >= diagonal) of the last two dims; zeros below."""
    return _tri(input, diagonal, False, "triu", "TriuBackward0")


def _tri_(fn):
    def op_(self, diagonal=0):
        check_inplace(self)
        src = snapshot(self) if (self._rg and _gstate.enabled) else self
        return commit_inplace(self, fn(src, diagonal))
    op_.__name__ = fn.__name__ + "_"
    return op_


def meshgrid(*tensors, indexing=None):
    """Coordinate grids (expanded views) from 0-D/1-D tensors; indexing 'ij' (default) or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = _tensor_list(tensors, "meshgrid")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for x in tensors:
        if x.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a "
                               f"{x.ndim}D tensor of shape {list(x.shape)}")
        if x._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    check_same_device(*tensors)
    swap = indexing == "xy" and len(tensors) >= 2
    ts = list(tensors)
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = tuple(x.numel() for x in ts)
    n = len(ts)
    out = []
    for i, x in enumerate(ts):
        g = expand(reshape(x, tuple(sizes[i] if j == i else 1 for j in range(n))), sizes)
        out.append(g)
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# -- Tensor-only shape methods ----------------------------------------------------------------------
def unfold(self, dimension, size, step):
    """Windows of `size` elements every `step` along `dimension`, as a new last dim (a copy, not a view
    as in PyTorch: writes into it do not reach self)."""
    shape = tuple(self._data.shape)
    nd = len(shape)
    d = wrap_dim(dimension, max(nd, 1))
    n = shape[d] if nd else 1
    size, step = _int(size, "size"), _int(step, "step")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    from .creation import arange
    if nd == 0:
        return self.reshape(1)
    count = (n - size) // step + 1
    starts = arange(count, dtype=_dt.int64, device=self._dev) * step
    idx = (starts.unsqueeze(1) + arange(size, dtype=_dt.int64, device=self._dev)).reshape(-1)
    windows = self.index_select(d, idx).reshape(shape[:d] + (count, size) + shape[d + 1:])
    return movedim(windows, d + 1, -1)


def sum_to_size(self, *size):
    """self summed down to `size` (self must broadcast from it)."""
    size = _shape_args(size)
    shape = tuple(self._data.shape)
    try:
        ok = broadcast_all_shapes(tuple(size), shape) == shape
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    return sum_to(self, tuple(size))


def narrow_copy(input, dim, start, length):
    return narrow(input, dim, start, length).clone()


def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all dims of equal length, or a 2-D matrix; `wrap`: a tall matrix's
    diagonal restarts every columns + 1 rows, as NumPy's fill_diagonal)."""
    shape = tuple(self._data.shape)
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    numel = self.numel()
    if len(shape) == 2:
        step = shape[1] + 1
        end = numel if wrap else min(numel, shape[1] * shape[1])
    else:
        step = sum(shape[0] ** k for k in range(len(shape)))
        end = numel
    from .creation import arange
    idx = arange(0, end, step, dtype=_dt.int64, device=self._dev)
    return self.copy_(self.reshape(-1).index_fill(0, idx, fill_value).reshape(shape))


def _attach():
    T = Tensor
    T.unfold, T.sum_to_size, T.narrow_copy, T.fill_diagonal_ = unfold, sum_to_size, narrow_copy, fill_diagonal_
    for name in ("reshape", "view", "view_as", "reshape_as", "expand", "expand_as", "broadcast_to", "permute",
                 "transpose", "swapaxes", "swapdims", "t", "movedim", "moveaxis", "squeeze", "unsqueeze",
                 "flatten", "unflatten", "ravel", "contiguous", "is_contiguous", "chunk", "tensor_split",
                 "unbind", "narrow", "select", "fliplr", "flipud", "roll", "repeat", "tile", "diagonal",
                 "diag", "diag_embed", "tril", "triu", "hsplit", "vsplit", "dsplit", "split_with_sizes"):
        setattr(T, name, globals()[name])
    T.split = lambda self, split_size, dim=0: split(self, split_size, dim)
    T.flip = flip
    T.repeat_interleave = repeat_interleave
    T.tril_ = _tri_(tril)
    T.triu_ = _tri_(triu)
    T.T = property(_T)
    T.mT = property(_mT)
    T.H = property(_H)
    T.mH = property(_mH)


_attach()
PUBLIC = ["reshape", "permute", "broadcast_to", "broadcast_tensors", "transpose", "swapaxes", "swapdims", "t",
          "movedim", "moveaxis", "squeeze", "unsqueeze", "flatten", "unflatten", "ravel", "cat", "concat",
          "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack", "chunk", "split",
          "split_with_sizes", "tensor_split", "hsplit", "vsplit", "dsplit", "unbind", "narrow", "select", "flip",
          "fliplr", "flipud", "roll", "tile", "repeat_interleave", "diagonal", "diag", "diag_embed", "tril",
          "triu", "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d", "narrow_copy"]
