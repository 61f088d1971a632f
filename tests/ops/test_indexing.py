"""Indexing: the seed-000 advanced-indexing examples, get/set against NumPy (hypothesis, including
0-d, empty and non-contiguous tensors), views, error messages, the gather/scatter/index_*/masked_*
family, and gradients (first and second order) against finite differences."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tensorplug as torch
from tensorplug.autograd import gradcheck, gradgradcheck


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def randt(*shape, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(-2, 2, size=shape), dtype=torch.float64, requires_grad=requires_grad)


# -- seed 000 examples ------------------------------------------------------------------------------
@pytest.fixture
def seed_x():
    x = torch.Tensor(5, 5, 5)
    x[:] = torch.arange(125.).reshape(5, 5, 5)
    return x


def test_seed_examples(seed_x):
    x = seed_x
    a = np.arange(125.).reshape(5, 5, 5)
    assert x.tolist() == a.tolist()
    r = x[[1, 2], [3, 2], [1, 0]]
    assert r.shape == (2,) and r.tolist() == [a[1, 3, 1], a[2, 2, 0]] == [41.0, 60.0]
    r = x[[2, 3, 2], [0], [1]]
    assert r.shape == (3,) and r.tolist() == [a[2, 0, 1], a[3, 0, 1], a[2, 0, 1]] == [51.0, 76.0, 51.0]
    r = x[[[1, 0], [0, 1]], [0], [1]]
    assert r.shape == (2, 2)
    assert r.tolist() == [[a[1, 0, 1], a[0, 0, 1]], [a[0, 0, 1], a[1, 0, 1]]] == [[26.0, 1.0], [1.0, 26.0]]
    r = x[[0, 3], :, :]
    assert r.shape == (2, 5, 5) and r.tolist() == a[[0, 3]].tolist()
    r = x[[0, 3], ...]
    assert r.shape == (2, 5, 5) and r.tolist() == a[[0, 3]].tolist()
    r = x[torch.LongTensor([0, 2, 4]), :, :]
    assert r.shape == (3, 5, 5) and r.tolist() == a[[0, 2, 4]].tolist()
    r = x[[1, 3], ]
    assert r.shape == (2, 5, 5) and r.tolist() == a[[1, 3]].tolist()
    assert x.dtype == torch.float32 and r.dtype == torch.float32


def test_seed_examples_set(seed_x):
    x = seed_x
    a = np.arange(125.).reshape(5, 5, 5)
    x[[1, 2], [3, 2], [1, 0]] = -1
    a[[1, 2], [3, 2], [1, 0]] = -1
    x[[0, 3], ...] = torch.ones(5)
    a[[0, 3], ...] = 1
    x[torch.LongTensor([0, 2, 4]), :, 1] = torch.tensor([7., 8., 9.]).reshape(3, 1)
    a[[0, 2, 4], :, 1] = np.array([7., 8., 9.]).reshape(3, 1)
    assert x.tolist() == a.tolist()


# -- get and set against NumPy ----------------------------------------------------------------------
def _source(shape, layout):
    """A float64 tensor of `shape` holding 0, 1, 2, ... in some memory layout, its base, and the
    NumPy twins (the view and its base)."""
    n = int(np.prod(shape)) if shape else 1
    if layout == "permuted" and len(shape) >= 2:
        bshape = tuple(reversed(shape))
        nb = np.arange(float(n)).reshape(bshape)
        base = torch.tensor(nb)
        order = tuple(reversed(range(len(shape))))
        return base.permute(*order), base, nb.transpose(order), nb
    if layout == "strided" and len(shape) >= 1:
        bshape = (2 * shape[0],) + tuple(shape[1:])
        nb = np.arange(float(int(np.prod(bshape)))).reshape(bshape)
        base = torch.tensor(nb)
        return base[::2], base, nb[::2], nb
    nb = np.arange(float(n)).reshape(shape)
    base = torch.tensor(nb)
    return base, base, nb, nb


_ARRAY_KINDS = ("list", "np64", "np32", "t64", "t32")


@st.composite
def _index_case(draw):
    nd = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=nd, max_size=nd)))
    layout = draw(st.sampled_from(["contiguous", "permuted", "strided"]))
    ish = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))   # index arrays broadcast to it

    def item(free):
        """An index item using at most `free` dims; returns (item, dims it takes)."""
        kinds = ["none", "bool"] + (["int", "slice", "array", "array", "mask"] if free else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "none":
            return ("none", None), 0
        if kind == "bool":
            return ("bool", draw(st.booleans())), 0
        if kind == "mask":
            return ("mask", draw(st.integers(1, free)), draw(st.sampled_from(["np", "tensor"]))), -1
        return (kind,), 1

    def fill(it, dims):
        """Complete an item now that the dims it indexes (sizes) are known."""
        kind = it[0]
        if kind == "int":
            n = dims[0]
            return ("int", draw(st.integers(-n, n - 1)) if n else 0)
        if kind == "slice":
            def bound():
                return st.one_of(st.none(), st.integers(-6, 6))
            return ("slice", slice(draw(bound()), draw(bound()), draw(st.one_of(st.none(), st.integers(1, 3)))))
        if kind == "array":
            n = dims[0]
            s = tuple(1 if draw(st.booleans()) else v for v in ish)
            if n == 0:
                vals = np.zeros(s[:-1] + (0,) if s else (0,), dtype=np.int64)
            else:
                vals = np.array(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(s)),
                                              max_size=int(np.prod(s)))), dtype=np.int64).reshape(s)
            how = draw(st.sampled_from(_ARRAY_KINDS))
            # a 0-d integer array or tensor acts as an integer (PyTorch; NumPy: a 0-d index array)
            return ("array", vals, how) if vals.ndim else ("int", int(vals), how)
        if kind == "mask":
            vals = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(dims)), max_size=int(np.prod(dims)))),
                            dtype=bool).reshape(dims)
            return ("mask", vals, it[2])
        return it

    def take(n_items, lo, hi, forward):
        """Items indexing dims [lo, hi): forward from lo (before any ellipsis) or back from hi."""
        out = []
        for _ in range(n_items):
            it, k = item(hi - lo)
            if k == -1:
                k = it[1]
            dims = shape[lo:lo + k] if forward else shape[hi - k:hi]
            out.append(fill(it, dims))
            if forward:
                lo += k
            else:
                hi -= k
        return (out if forward else out[::-1]), lo, hi

    prefix, lo, hi = take(draw(st.integers(0, 4)), 0, nd, True)
    if draw(st.booleans()):
        suffix, _, _ = take(draw(st.integers(0, 3)), lo, nd, False)
        items = prefix + [("ell", Ellipsis)] + suffix
    else:
        items = prefix
    return shape, layout, items


def _keys(items, nd):
    """(tensorplug key, NumPy key, NumPy two-step keys) for the drawn items. The NumPy keys spell
    the ellipsis out as full slices: PyTorch (and tensorplug) ignore an ellipsis that spans no
    dimension when deciding whether index arrays are adjacent; NumPy does not."""
    used = sum(1 if kind in ("int", "slice", "array") else v.ndim if kind == "mask" else 0
               for kind, v, *_ in items)
    ell = (slice(None),) * (nd - used)
    tk, nk, s1, s2 = [], [], [], []
    def as_kind(v, how):
        return {"list": lambda: v.tolist(), "np64": lambda: v, "np32": lambda: v.astype(np.int32),
                "t64": lambda: torch.tensor(v), "t32": lambda: torch.tensor(v, dtype=torch.int32)}[how]()

    for kind, v, *extra in items:
        if kind == "array":
            tk.append(as_kind(v, extra[0]))
            nk.append(v)
            s1.append(slice(None))
            s2.append(v)
        elif kind == "mask":
            tk.append(torch.tensor(v) if extra[0] == "tensor" else v)
            nk.append(v)
            s1.extend([slice(None)] * v.ndim)
            s2.append(v)
        elif kind == "bool":
            tk.append(v)
            nk.append(v)
            s1.append(None)
            s2.append(np.zeros(1 if v else 0, dtype=np.int64))
        elif kind == "int":
            tk.append(as_kind(np.array(v), extra[0]) if extra else v)
            nk.append(v)
            s1.append(v)
        elif kind == "ell":
            tk.append(v)
            nk.extend(ell)
            s1.extend(ell)
            s2.extend(ell)
        else:
            tk.append(v)
            nk.append(v)
            s1.append(v)
            s2.append(slice(None))
    return tuple(tk), tuple(nk), (tuple(s1) + (Ellipsis,), tuple(s2))


def _is_advanced(items):
    return any(kind in ("array", "mask", "bool") for kind, *_ in items)


def _two_step(items):
    """PyTorch applies integers before advanced indices (NumPy treats them as advanced indices,
    which only matters when a slice separates them from the index arrays)."""
    return _is_advanced(items) and any(kind == "int" for kind, *_ in items)


def _np_get(a, items, nk, steps):
    if _two_step(items):
        return np.asarray(a[steps[0]][steps[1]])
    if _is_advanced(items):
        # the two-step rule agrees with NumPy when no integers are involved (checks the oracle)
        assert np.array_equal(np.asarray(a[steps[0]][steps[1]]), np.asarray(a[nk]))
    return np.asarray(a[nk])


def _np_set(a, items, nk, steps, value):
    if _two_step(items):
        view = a[steps[0]]
        view[steps[1]] = value
    else:
        a[nk] = value


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_index_case())
def test_getitem_matches_numpy(case):
    shape, layout, items = case
    x, base, a, nb = _source(shape, layout)
    tk, nk, steps = _keys(items, len(shape))
    try:
        expected = _np_get(a, items, nk, steps)
    except IndexError:
        with pytest.raises(IndexError):
            x[tk]
        return
    r = x[tk]
    assert tuple(r.shape) == expected.shape
    assert r.dtype == torch.float64
    np.testing.assert_array_equal(r.numpy(), expected)
    if not _is_advanced(items):
        # basic indexing gives a view: writes through it reach the base
        v0 = base._version
        r[...] = -1.0
        a[tuple(k for k in nk)] = -1.0
        np.testing.assert_array_equal(base.numpy(), nb)
        assert base._version > v0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_index_case(), st.data())
def test_setitem_matches_numpy(case, data):
    shape, layout, items = case
    x, base, a, nb = _source(shape, layout)
    tk, nk, steps = _keys(items, len(shape))
    try:
        out_shape = _np_get(a, items, nk, steps).shape
    except IndexError:
        with pytest.raises(IndexError):
            x[tk] = 1.0
        return
    how = data.draw(st.sampled_from(["scalar", "full", "suffix", "int_tensor"]))
    if how == "scalar":
        nv, tv = -7.5, -7.5
    else:
        cut = 0 if how != "suffix" else data.draw(st.integers(0, len(out_shape)))
        vshape = out_shape[cut:]
        nv = -1.0 - np.arange(float(int(np.prod(vshape)))).reshape(vshape)
        tv = torch.tensor(nv)
        if how == "int_tensor":       # cast to the destination's dtype
            tv = tv.long()
    v0 = base._version
    x[tk] = tv
    _np_set(a, items, nk, steps, nv)
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(base.numpy(), nb)
    assert base._version == v0 + 1


# -- specific get/set behaviour --------------------------------------------------------------------------
def test_scalar_results_and_views():
    x = torch.arange(5.)
    s = x[0]
    assert s.shape == () and s.item() == 0.0
    assert x[-1].item() == 4.0
    m = torch.arange(12.).reshape(3, 4)
    v = m[1]
    v[2] = 100.0
    assert m[1, 2].item() == 100.0
    w = m[:, 1::2]
    w[...] = 0.0
    assert m.tolist() == [[0, 0, 2, 0], [4, 0, 100, 0], [8, 0, 10, 0]]
    c = m[[0, 1]]                                   # advanced indexing copies
    c[0, 0] = 55.0
    assert m[0, 0].item() == 0.0
    assert m[None].shape == (1, 3, 4) and m[..., None].shape == (3, 4, 1)
    assert m[True].shape == (1, 3, 4) and m[False].shape == (0, 3, 4)
    assert m[[]].shape == (0, 4)
    # integers are applied first, as in PyTorch (NumPy would give shape (2, 3))
    t = torch.arange(24).reshape(2, 3, 4)
    assert t[0, :, [1, 2]].shape == (3, 2)
    assert t[0, :, [1, 2]].tolist() == [[1, 2], [5, 6], [9, 10]]
    assert t[[0, 1], :, 0].shape == (2, 3)
    z = torch.tensor(3.0)
    assert z[None].shape == (1,) and z[...].shape == () and z[True].shape == (1,)


def test_bool_masks():
    x = torch.arange(6.).reshape(2, 3)
    assert x[x > 2].tolist() == [3.0, 4.0, 5.0]
    assert x[[True, False]].tolist() == [[0.0, 1.0, 2.0]]
    assert x[:, torch.tensor([True, False, True])].tolist() == [[0.0, 2.0], [3.0, 5.0]]
    assert x[np.array([[True, False, True], [False, False, True]])].tolist() == [0.0, 2.0, 5.0]
    x[x > 3] = 0
    assert x.tolist() == [[0, 1, 2], [3, 0, 0]]


def test_setitem_value_broadcast_and_cast():
    x = torch.zeros(3, 4)
    x[0] = torch.ones(1, 4)                          # leading 1s of the value are dropped
    x[1:] = torch.arange(4)                          # int64 value cast to float32
    assert x.dtype == torch.float32
    assert x.tolist() == [[1, 1, 1, 1], [0, 1, 2, 3], [0, 1, 2, 3]]
    i = torch.zeros(3, dtype=torch.int64)
    i[1] = 2.7                                       # truncated like PyTorch
    assert i.tolist() == [0, 2, 0]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 4\] cannot be broadcast "
                                           r"to indexing result of shape \[2, 4\]"):
        x[[0, 1]] = torch.ones(3, 4)
    y = torch.arange(5.)
    y[1:] = y[:-1]                                   # overlapping source and destination
    assert y.tolist() == [0, 0, 1, 2, 3]
    y[[0, 1]] = [9.0, 8.0]                           # values from a list
    assert y.tolist() == [9, 8, 1, 2, 3]


def test_setitem_bumps_version_and_invalidates_saved():
    a = torch.ones(3, requires_grad=True)
    b = a * 2
    c = b * b                                        # saves b
    v = b._version
    b[0] = 5.0
    assert b._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


# -- errors -----------------------------------------------------------------------------------------------
def test_out_of_range_messages():
    x = torch.zeros(5, 3)
    with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 0 with size 5$"):
        x[5]
    with pytest.raises(IndexError, match=r"^index -6 is out of bounds for dimension 0 with size 5$"):
        x[-6]
    with pytest.raises(IndexError, match=r"^index 3 is out of bounds for dimension 1 with size 3$"):
        x[:, 3]
    with pytest.raises(IndexError, match=r"^index 7 is out of bounds for dimension 1 with size 3$"):
        x[:, [0, 7, 1]]
    with pytest.raises(IndexError, match=r"^index -4 is out of bounds for dimension 1 with size 3$"):
        x[[0, 1], torch.tensor([-4, 0])]
    with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 0 with size 5$"):
        x[[5]] = 1.0
    with pytest.raises(IndexError, match=r"^index 9 is out of bounds for dimension 0 with size 5$"):
        x[9, 0] = 1.0


def test_other_index_errors():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not match the shape of "
                                         r"the indexed tensor \[2, 3\] at index 0"):
        x[torch.tensor([True, False, True])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2, 2\] at index 1"):
        x[np.ones((2, 2), dtype=bool)]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[:, ::0]
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[torch.tensor([0.0, 1.0])]
    with pytest.raises(IndexError):
        x[[0.5]]
    with pytest.raises(IndexError):
        x["a"]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    assert torch.zeros(5)[np.int64(2)].shape == ()


# -- the op family: values -------------------------------------------------------------------------------
def test_index_select():
    x = torch.arange(6.).reshape(2, 3)
    assert torch.index_select(x, 1, torch.tensor([2, 0, 2])).tolist() == [[2, 0, 2], [5, 3, 5]]
    assert x.index_select(0, torch.tensor(1)).tolist() == [[3, 4, 5]]
    assert x.index_select(-1, torch.tensor([], dtype=torch.int64)).shape == (2, 0)
    assert torch.tensor(5.0).index_select(0, torch.tensor([0])).shape == ()
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.index_select(1, torch.tensor([3]))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(1, torch.tensor([[0]]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.index_select(2, torch.tensor([0]))


def test_masked_select_fill_scatter():
    x = torch.arange(6.).reshape(2, 3)
    m = torch.tensor([True, False, True])
    assert torch.masked_select(x, m).tolist() == [0, 2, 3, 5]             # mask broadcast
    assert torch.masked_select(torch.tensor(2.0), torch.tensor([True, True])).tolist() == [2, 2]
    assert x.masked_fill(x > 2, -1).tolist() == [[0, 1, 2], [-1, -1, -1]]
    assert x.masked_fill(m, torch.tensor(9.0)).tolist() == [[9, 1, 9], [9, 4, 9]]
    assert x[0].masked_fill(torch.tensor([[True], [False]]), 9).tolist() == [[9, 9, 9], [0, 1, 2]]
    assert x.long().masked_fill(x > 2, 1.5).tolist() == [[0, 1, 2], [1, 1, 1]]
    y = x.clone()
    assert y.masked_fill_(y < 2, 0.5) is y and y.tolist() == [[0.5, 0.5, 2], [3, 4, 5]]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill((x > 2).long(), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill(x > 2, torch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x[0].masked_fill_(torch.tensor([[True], [False]]), 9)
    with pytest.raises(RuntimeError, match="expected BoolTensor"):
        x.masked_select((x > 2).long())
    assert x.masked_scatter(m, torch.arange(10.)).tolist() == [[0, 1, 1], [2, 4, 3]]
    z = torch.zeros(2, 3)
    z.masked_scatter_(torch.tensor([[True, False, False], [False, True, True]]), torch.tensor([7., 8., 9., 10.]))
    assert z.tolist() == [[7, 0, 0], [0, 8, 9]]
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        x.masked_scatter(x > 2, torch.ones(2))
    with pytest.raises(RuntimeError, match="same dtypes"):
        x.masked_scatter(x > 2, torch.ones(5, dtype=torch.float64))


def test_gather_scatter():
    x = torch.arange(6.).reshape(2, 3)
    assert torch.gather(x, 1, torch.tensor([[0, 0], [2, 1]])).tolist() == [[0, 0], [5, 4]]
    assert x.gather(0, torch.tensor([[1, 0, 1]])).tolist() == [[3, 1, 5]]
    # index smaller than input in the other dimension
    assert x.gather(1, torch.tensor([[2]])).tolist() == [[2]]
    assert x.scatter(1, torch.tensor([[0], [2]]), 9.0).tolist() == [[9, 1, 2], [3, 4, 9]]
    assert x.scatter(1, torch.tensor([[0], [2]]), torch.tensor([[7.0, 0.0], [8.0, 0.0]])).tolist() == \
        [[7, 1, 2], [3, 4, 8]]
    assert x.scatter(1, torch.tensor([[1]]), torch.tensor([[1.0]]), reduce="add").tolist() == \
        [[0, 2, 2], [3, 4, 5]]
    # scatter_add sums duplicates
    z = torch.zeros(3)
    assert z.scatter_add(0, torch.tensor([0, 2, 0, 0]), torch.tensor([1., 2., 3., 4.])).tolist() == [8, 0, 2]
    z.scatter_add_(0, torch.tensor([1, 1]), torch.tensor([5., 6.]))
    assert z.tolist() == [0, 11, 0]
    y = torch.zeros(2, 3)
    assert y.scatter_(0, torch.tensor([[1, 0, 1]]), torch.tensor([[1., 2., 3.]])) is y
    assert y.tolist() == [[0, 2, 0], [1, 0, 3]]
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, torch.tensor([[3]]))
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 1 with size 3"):
        x.gather(1, torch.tensor([[-1]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(1, torch.tensor([0]))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds"):
        x.scatter(1, torch.tensor([[0], [3]]), 9.0)
    with pytest.raises(RuntimeError, match=r"Expected index \[1, 2\] to be no larger than self \[2, 3\] apart "
                                           r"from dimension 1 and to be no larger size than src \[1, 1\]"):
        x.scatter_add(1, torch.tensor([[0, 0]]), torch.ones(1, 1))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter(1, torch.tensor([[0]]), torch.ones(1, 1, dtype=torch.float64))


def test_index_add_copy_fill_put():
    x = torch.arange(6.).reshape(2, 3)
    assert x.index_add(1, torch.tensor([0, 0]), torch.ones(2, 2)).tolist() == [[2, 1, 2], [5, 4, 5]]
    assert torch.index_add(x, 0, torch.tensor([1]), torch.ones(1, 3), alpha=2).tolist() == [[0, 1, 2], [5, 6, 7]]
    assert x.index_copy(0, torch.tensor([1]), torch.zeros(1, 3)).tolist() == [[0, 1, 2], [0, 0, 0]]
    assert x.index_fill(1, torch.tensor([-1]), 7).tolist() == [[0, 1, 7], [3, 4, 7]]
    assert x.index_fill(0, torch.tensor([0]), torch.tensor(-2.0)).tolist() == [[-2, -2, -2], [3, 4, 5]]
    assert x.index_put((torch.tensor([0, 0]),), torch.tensor(1.0), accumulate=True).tolist() == \
        [[2, 3, 4], [3, 4, 5]]
    assert torch.index_put(x, (torch.tensor([1]), torch.tensor([2])), torch.tensor(-1.0)).tolist() == \
        [[0, 1, 2], [3, 4, -1]]
    y = x.clone()
    y.index_put_((torch.tensor([0, 0, 1]), torch.tensor([1, 1, 0])), torch.tensor([1., 2., 3.]), accumulate=True)
    assert y.tolist() == [[0, 4, 2], [6, 4, 5]]
    y.index_add_(0, torch.tensor([0]), torch.ones(1, 3))
    y.index_fill_(1, torch.tensor([2]), 0.0)
    y.index_copy_(1, torch.tensor([0]), torch.tensor([[9.0], [9.0]]))
    assert y.tolist() == [[9, 5, 0], [9, 4, 0]]
    assert x.take(torch.tensor([[5, -1], [0, 0]])).tolist() == [[5, 5], [0, 0]]
    assert x.put(torch.tensor([5, -1]), torch.tensor([9., 8.]), accumulate=True).tolist() == [[0, 1, 2], [3, 4, 22]]
    p = torch.arange(6.).reshape(2, 3).permute(1, 0)                       # non-contiguous target
    p.put_(torch.tensor([1, 4]), torch.tensor([-1., -2.]))
    assert p.tolist() == [[0, -1], [1, 4], [-2, 5]]
    assert torch.take_along_dim(x, torch.tensor([[0], [2]]), dim=1).tolist() == [[0], [5]]
    assert torch.take_along_dim(x, torch.tensor([[-1]]), dim=1).tolist() == [[2], [5]]   # broadcast
    assert torch.take_along_dim(x, torch.tensor([5, 0])).tolist() == [5, 0]
    with pytest.raises(IndexError, match="out of range: tried to access index 6 on a tensor of 6 elements"):
        x.take(torch.tensor([6]))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self \(Float\) and source \(Double\) must have the "
                                           r"same scalar type"):
        x.index_add(1, torch.tensor([0]), torch.ones(2, 1, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Number of indices"):
        x.index_add(1, torch.tensor([0]), torch.ones(2, 2))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.index_add(1, torch.tensor([3]), torch.ones(2, 1))
    with pytest.raises(RuntimeError, match="dtypes match"):
        x.index_put((torch.tensor([0]),), torch.tensor(1.0, dtype=torch.float64))


def test_nonzero_argwhere():
    x = torch.tensor([[0., 1., 0.], [2., 0., 3.]])
    assert torch.nonzero(x).tolist() == [[0, 1], [1, 0], [1, 2]]
    assert torch.nonzero(x).dtype == torch.int64
    rows, cols = torch.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1, 1] and cols.tolist() == [1, 0, 2]
    assert torch.argwhere(x > 1).tolist() == [[1, 0], [1, 2]]
    assert torch.nonzero(torch.tensor([0, 3, 0, 4])).tolist() == [[1], [3]]
    assert torch.nonzero(torch.tensor(0.0)).shape == (0, 0)
    assert torch.nonzero(torch.tensor(1.0)).shape == (1, 0)
    assert [t.tolist() for t in torch.nonzero(torch.tensor(1.0), as_tuple=True)] == [[0]]
    assert torch.nonzero(torch.zeros(0, 3)).shape == (0, 2)
    assert [t.tolist() for t in torch.where(x > 1)] == [[1, 1], [0, 2]]


# -- gradients --------------------------------------------------------------------------------------------
def test_getitem_repeated_indices_accumulate():
    x = torch.zeros(3, requires_grad=True)
    x[[0, 0]].sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 0.0]
    y = torch.ones(2, 3, requires_grad=True)
    (y[[1, 1, 0], [2, 2, 2]] * torch.tensor([1., 2., 3.])).sum().backward()
    assert y.grad.tolist() == [[0, 0, 3], [0, 0, 3]]


@pytest.mark.parametrize("fn", [
    lambda a: a[1],
    lambda a: a[:, 1::2],
    lambda a: a[None, ..., -1],
    lambda a: a[[0, 0, 2], 1:],
    lambda a: a[[2, 0, 2], [1, 1, 1]],
    lambda a: a[a > 0],
    lambda a: a[[[0, 1], [1, 1]], :, None],
], ids=["int", "slice_step", "none_ellipsis", "repeated_rows", "repeated_pairs", "mask", "nested"])
def test_getitem_grad(fn):
    a = randt(3, 4, requires_grad=True)
    assert gradcheck(fn, (a,))
    assert gradgradcheck(lambda a: fn(a) ** 2, (a,))


def test_getitem_grad_noncontiguous():
    a = randt(4, 3, requires_grad=True)
    assert gradcheck(lambda a: a.permute(1, 0)[[0, 2, 2], ::2], (a,))
    assert gradgradcheck(lambda a: a.permute(1, 0)[[0, 2, 2], ::2] ** 2, (a,))


@pytest.mark.parametrize("key", [(1,), (slice(0, 3, 2),), ([0, 2], [1, 3]), (Ellipsis, [True, False, True, True])],
                         ids=["int", "slice", "pairs", "mask"])
def test_setitem_grad_on_nonleaf(key):
    def fn(a, v):
        b = a * 1.5
        b[key] = v
        return b * b
    a = randt(3, 4, seed=1, requires_grad=True)
    target = np.empty((3, 4))[key].shape
    v = randt(*target[-1:], seed=2, requires_grad=True)         # broadcast over leading dims
    assert gradcheck(fn, (a, v))
    assert gradgradcheck(fn, (a, v))
    b = a * 1.0
    b[key] = v
    assert b.grad_fn.name() in ("CopySlices", "IndexPutBackward0")
    ga, gv = torch.autograd.grad(b.sum(), (a, v))
    expect = np.ones((3, 4))
    expect[key] = 0
    assert f64(ga).tolist() == expect.tolist()
    assert f64(gv).tolist() == np.full(v.shape, float(np.prod(target) // np.prod(v.shape))).tolist()


def test_setitem_on_leaf_requiring_grad_raises():
    a = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a[0] = 1.0
    with torch.no_grad():
        a[0] = 1.0
    assert a.tolist() == [1.0, 0.0, 0.0] and a.grad_fn is None


def test_setitem_value_grad_into_plain_tensor():
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    out = torch.zeros(4)
    out[[3, 0]] = v * 2
    assert not out.is_leaf
    (out * torch.arange(4.0)).sum().backward()
    assert v.grad.tolist() == [6.0, 0.0]


IDX = torch.tensor([[0, 2, 1], [2, 2, 0]])


@pytest.mark.parametrize("name,fn,shapes", [
    ("gather", lambda a: a.gather(1, IDX[:, :2]), [(2, 3)]),
    ("scatter", lambda a, s: a.scatter(1, torch.tensor([[2, 0], [1, 2]]), s), [(2, 3), (2, 2)]),
    ("scatter_value", lambda a: a.scatter(0, torch.tensor([[1, 0, 1]]), 2.0), [(2, 3)]),
    ("scatter_add", lambda a, s: a.scatter_add(1, IDX, s), [(2, 3), (2, 4)]),
    ("index_select", lambda a: a.index_select(1, torch.tensor([2, 0, 2])), [(2, 3)]),
    ("masked_select", lambda a: a.masked_select(torch.tensor([True, False, True])), [(2, 3)]),
    ("masked_fill", lambda a: a.masked_fill(torch.tensor([[True, False, True], [False, False, True]]), 0.5),
     [(2, 3)]),
    ("masked_fill_tensor", lambda a, v: a.masked_fill(torch.tensor([False, True, True]), v), [(2, 3), ()]),
    ("masked_scatter", lambda a, s: a.masked_scatter(torch.tensor([[True, False, True], [False, True, False]]), s),
     [(2, 3), (5,)]),
    ("index_add", lambda a, s: a.index_add(0, torch.tensor([1, 1, 0]), s, alpha=2), [(2, 3), (3, 3)]),
    ("index_copy", lambda a, s: a.index_copy(1, torch.tensor([2, 0]), s), [(2, 3), (2, 2)]),
    ("index_fill", lambda a, v: a.index_fill(1, torch.tensor([-1]), v), [(2, 3), ()]),
    ("index_put_acc", lambda a, s: a.index_put((torch.tensor([0, 1, 0]), torch.tensor([2, 2, 2])), s,
                                               accumulate=True), [(2, 3), (3,)]),
    ("take", lambda a: a.take(torch.tensor([[5, 0], [-1, 5]])), [(2, 3)]),
    ("take_along_dim", lambda a: torch.take_along_dim(a, torch.tensor([[2, 0]]), dim=1), [(2, 3)]),
    ("put", lambda a, s: a.put(torch.tensor([4, -6]), s), [(2, 3), (2,)]),
])
def test_family_grad(name, fn, shapes):
    inputs = tuple(randt(*s, seed=i, requires_grad=True) for i, s in enumerate(shapes))
    assert gradcheck(fn, inputs)
    assert gradgradcheck(lambda *xs: fn(*xs) ** 2, inputs)


def test_gather_scatter_add_grads_are_each_other():
    a = randt(2, 3, requires_grad=True)
    out = a.gather(1, IDX)
    assert out.grad_fn.name() == "GatherBackward0"
    go = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(out, a, go, create_graph=True)
    assert f64(g).tolist() == [[1, 1, 1], [1, 0, 2]]            # repeated indices accumulate
    assert g.grad_fn.name() == "ScatterAddBackward0"


def test_inplace_family_autograd():
    a = randt(2, 3, requires_grad=True)
    s = randt(2, 1, seed=3, requires_grad=True)

    def fn(a, s):
        b = a * 2
        b.index_add_(1, torch.tensor([1]), s)
        b.masked_fill_(torch.tensor([True, False, False]), 0.0)
        b.scatter_(1, torch.tensor([[2], [2]]), s)
        return b * b
    assert gradcheck(fn, (a, s))
    assert gradgradcheck(fn, (a, s))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        a.index_fill_(0, torch.tensor([0]), 1.0)


@pytest.mark.parametrize("contiguous", [True, False])
def test_numpy_scatter_kernels_against_loop(contiguous):
    """The NumPy backend's scatter / scatter_add (flat positions for C-contiguous x, a grid key
    otherwise) against a loop over idx in row-major order: last write wins, duplicates summed in order;
    idx smaller than x and src larger than idx; an index outside the axis is an IndexError."""
    from tensorplug.backends.numpy_backend.kernels import build
    K = build()
    rng = np.random.default_rng(3)
    for _ in range(60):
        nd = int(rng.integers(1, 4))
        xs = tuple(int(n) for n in rng.integers(1, 5, nd))
        axis = int(rng.integers(0, nd))
        ish = [int(rng.integers(1, n + 1)) for n in xs]
        ish[axis] = int(rng.integers(1, 7))
        idx = rng.integers(0, xs[axis], ish)
        src = rng.standard_normal([n + int(rng.integers(0, 2)) for n in ish])
        for name in ("scatter", "scatter_add"):
            x0 = rng.standard_normal(xs)
            x = x0.copy() if contiguous else np.asfortranarray(x0)
            want = x0.copy()
            for pos in np.ndindex(*ish):
                tgt = pos[:axis] + (idx[pos],) + pos[axis + 1:]
                want[tgt] = src[pos] if name == "scatter" else want[tgt] + src[pos]
            K[name](x, idx, src, axis)
            np.testing.assert_array_equal(x, want)
    bad = np.array([[0, 4]])
    for name in ("scatter", "scatter_add"):
        with pytest.raises(IndexError):
            K[name](np.zeros((1, 4)), bad, np.ones((1, 2)), 1)
        with pytest.raises(IndexError):                   # idx wider than x off the axis
            K[name](np.zeros((2, 4)), np.zeros((2, 5), np.int64), np.ones((2, 5)), 0)
