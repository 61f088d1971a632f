"""Embedding and EmbeddingBag: lookups against NumPy, padding_idx (no gradient; left out of bags),
max_norm renormalization in place, scale_grad_by_freq, bags by offsets (incl. empty bags and
include_last_offset) against a per-bag loop, per_sample_weights, the optional `embedding_bag`
kernel native vs decomposition, first and second gradients, modules and reprs."""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.backends.numpy_backend import norm as np_norm
from tensorplug.dispatch.decompositions import DECOMPOSITIONS


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def weight(v=7, d=3, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal((v, d)), dtype=torch.float64, requires_grad=requires_grad)


def ids(*vals):
    return torch.tensor(list(vals), dtype=torch.int64)


# -- embedding ---------------------------------------------------------------------------------------------
def test_embedding_lookup_shapes_and_values():
    w = weight()
    idx = torch.tensor([[1, 2, 4], [4, 3, 6]])
    out = F.embedding(idx, w)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(f64(out), f64(w)[np.array([[1, 2, 4], [4, 3, 6]])])
    assert F.embedding(torch.tensor(5), w).shape == (3,)
    with pytest.raises(IndexError):
        F.embedding(ids(7), w)
    with pytest.raises(IndexError):                               # no negative indices, as PyTorch
        F.embedding(torch.tensor([0, -1]), w)
    i32 = torch.tensor([[1, 2, 4], [4, 3, 6]], dtype=torch.int32)   # int32: the frontend ops' path
    np.testing.assert_array_equal(f64(F.embedding(i32, w)), f64(out))
    assert F.embedding(torch.zeros(2, 0, dtype=torch.long), w).shape == (2, 0, 3)
    with pytest.raises(RuntimeError, match="indices"):
        F.embedding(torch.tensor([1.0]), w)


def test_embedding_gradient_accumulates_and_skips_padding_idx():
    """Repeated indices accumulate; the padding_idx row gets exactly zero gradient."""
    w = weight(requires_grad=True)
    idx = torch.tensor([[1, 2, 1], [0, 2, 1]])
    g = torch.tensor(np.arange(18.0).reshape(2, 3, 3), dtype=torch.float64)
    F.embedding(idx, w, padding_idx=2).backward(g)
    expected = np.zeros((7, 3))
    gi = np.arange(18.0).reshape(-1, 3)
    for k, i in enumerate([1, 2, 1, 0, 2, 1]):
        if i != 2:
            expected[i] += gi[k]
    np.testing.assert_array_equal(f64(w.grad), expected)
    assert f64(w.grad)[2].tolist() == [0.0, 0.0, 0.0]


def test_embedding_gradcheck_gradgradcheck():
    w = weight(5, 2, requires_grad=True)
    fn = lambda w: F.embedding(torch.tensor([[0, 3], [3, 4]]), w) ** 2  # noqa: E731
    assert gradcheck(fn, (w,)) and gradgradcheck(fn, (w,))
    fn_pad = lambda w: F.embedding(torch.tensor([0, 3, 1]), w, padding_idx=3) * 2  # noqa: E731
    assert gradgradcheck(fn_pad, (w,))


def test_embedding_scale_grad_by_freq():
    """Each row's gradient is divided by how often its index occurs in the batch."""
    w = weight(requires_grad=True)
    F.embedding(ids(1, 1, 1, 4), w, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(f64(w.grad)[[1, 4, 0]], [[1.0] * 3, [1.0] * 3, [0.0] * 3])


def test_embedding_max_norm_renormalizes_rows_in_place():
    """Looked-up rows whose norm exceeds max_norm are rescaled in the weight itself; others untouched."""
    w = torch.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], dtype=torch.float64)
    out = F.embedding(ids(0, 1, 0), w, max_norm=1.0)
    np.testing.assert_allclose(f64(w)[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(f64(w)[1], [0.3, 0.4])
    np.testing.assert_allclose(f64(w)[2], [6.0, 8.0])          # not referenced
    np.testing.assert_allclose(f64(out)[0], [0.6, 0.8], rtol=1e-6)
    w1 = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    F.embedding(ids(0), w1, max_norm=1.0, norm_type=1.0)
    np.testing.assert_allclose(f64(w1), [[0.5, 0.5]], rtol=1e-6)


def test_embedding_module():
    """Embedding(n, d): weight ~ N(0, 1), padding row zeroed; from_pretrained freezes by default."""
    torch.manual_seed(0)
    m = nn.Embedding(1000, 8, padding_idx=-1)
    assert m.padding_idx == 999
    wv = f64(m.weight)
    assert wv[999].tolist() == [0.0] * 8
    assert abs(wv[:999].mean()) < 0.05 and abs(wv[:999].std() - 1) < 0.05
    out = m(torch.tensor([[1, 999]]))
    out.sum().backward()
    assert f64(m.weight.grad)[999].tolist() == [0.0] * 8 and f64(m.weight.grad)[1].tolist() == [1.0] * 8
    pre = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    e = nn.Embedding.from_pretrained(pre)
    assert not e.weight.requires_grad and e(ids(1)).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(pre, freeze=False).weight.requires_grad


# -- embedding_bag -----------------------------------------------------------------------------------------
def manual_bags(w, idx, offsets, mode, psw=None, padding_idx=None, include_last_offset=False):
    """One bag at a time, from the definition."""
    w, idx = f64(w), np.asarray(idx)
    offsets = list(np.asarray(offsets))
    ends = offsets[1:] + [len(idx)]
    if include_last_offset:
        offsets, ends = offsets[:-1], offsets[1:]
    out = []
    for s, e in zip(offsets, ends):
        rows = [(w[idx[i]] * (1.0 if psw is None else psw[i])) for i in range(s, e) if idx[i] != padding_idx]
        if not rows:
            out.append(np.zeros(w.shape[1]))
        elif mode == "sum":
            out.append(np.sum(rows, 0))
        elif mode == "mean":
            out.append(np.mean(rows, 0))
        else:
            out.append(np.max(rows, 0))
    return np.array(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_offsets_match_per_bag_loop(mode, padding_idx):
    """Bags given by offsets (with empty bags, including a trailing one) equal a per-bag computation."""
    w = weight(seed=1)
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 7, size=20)
    offsets = [0, 3, 3, 9, 10, 17, 20]
    out = F.embedding_bag(torch.tensor(idx), w, torch.tensor(offsets), mode=mode, padding_idx=padding_idx)
    np.testing.assert_allclose(f64(out), manual_bags(w, idx, offsets, mode, padding_idx=padding_idx),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_input_and_include_last_offset(mode):
    w = weight(seed=3)
    inp = torch.tensor([[1, 2, 3], [4, 4, 0]])
    np.testing.assert_allclose(f64(F.embedding_bag(inp, w, mode=mode)),
                               manual_bags(w, [1, 2, 3, 4, 4, 0], [0, 3], mode), rtol=1e-12)
    idx = [1, 2, 3, 4, 5, 6]
    out = F.embedding_bag(torch.tensor(idx), w, torch.tensor([0, 2, 2, 5]), mode=mode, include_last_offset=True)
    assert out.shape == (3, 3)
    np.testing.assert_allclose(f64(out), manual_bags(w, idx, [0, 2, 2, 5], mode, include_last_offset=True),
                               rtol=1e-12)


def test_embedding_bag_per_sample_weights():
    w = weight(seed=4)
    idx, offsets = [0, 1, 5, 2, 2], [0, 2]
    psw = np.array([0.5, -1.0, 2.0, 1.5, 0.25])
    out = F.embedding_bag(torch.tensor(idx), w, torch.tensor(offsets), mode="sum",
                          per_sample_weights=torch.tensor(psw, dtype=torch.float64), padding_idx=5)
    np.testing.assert_allclose(f64(out), manual_bags(w, idx, offsets, "sum", psw, padding_idx=5), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        F.embedding_bag(torch.tensor(idx), w, torch.tensor(offsets), mode="mean",
                        per_sample_weights=torch.tensor(psw, dtype=torch.float64))


def test_embedding_bag_argument_errors():
    w = weight()
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(torch.tensor([[1, 2]]), w, ids(0))
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(ids(1, 2), w)
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(ids(1, 2), w, ids(1))
    with pytest.raises(ValueError, match="mode"):
        F.embedding_bag(ids(1, 2), w, ids(0), mode="min")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck_gradgradcheck(mode):
    """Gradients w.r.t. the weight (and per_sample_weights in sum mode), first and second order."""
    w = weight(5, 2, seed=5, requires_grad=True)
    idx, off = ids(1, 3, 0, 3, 4, 2), ids(0, 2, 2, 5)
    fn = lambda w: F.embedding_bag(idx, w, off, mode=mode) ** 2  # noqa: E731
    assert gradcheck(fn, (w,)) and gradgradcheck(fn, (w,))
    if mode == "sum":
        psw = torch.tensor([0.5, -1.0, 2.0, 1.5, 0.3, -0.7], dtype=torch.float64, requires_grad=True)
        fnp = lambda w, p: F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=p) ** 2  # noqa: E731
        assert gradcheck(fnp, (w, psw)) and gradgradcheck(fnp, (w, psw))
        fnpad = lambda w, p: F.embedding_bag(idx, w, off, per_sample_weights=p, mode="sum", padding_idx=3)  # noqa
        assert gradcheck(fnpad, (w, psw)) and gradgradcheck(fnpad, (w, psw))


def test_embedding_bag_gradient_values():
    """mean mode divides by the bag size; max mode sends each column's gradient to its maximum;
    padding rows get none."""
    w = torch.tensor([[0.0, 5.0], [1.0, 2.0], [3.0, -1.0], [9.0, 9.0]], dtype=torch.float64, requires_grad=True)
    F.embedding_bag(ids(0, 1, 2, 3), w, ids(0, 3), mode="mean", padding_idx=3).sum().backward()
    np.testing.assert_allclose(f64(w.grad), [[1 / 3] * 2, [1 / 3] * 2, [1 / 3] * 2, [0, 0]])
    w.grad = None
    F.embedding_bag(ids(0, 1, 2), w, ids(0), mode="max").sum().backward()
    np.testing.assert_allclose(f64(w.grad), [[0, 1], [0, 0], [1, 0], [0, 0]])


def test_embedding_bag_scale_grad_by_freq():
    w = weight(requires_grad=True)
    F.embedding_bag(ids(1, 1, 2), w, ids(0, 2), mode="sum", scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(f64(w.grad)[[1, 2]], np.ones((2, 3)))


def test_embedding_bag_max_norm():
    w = torch.tensor([[3.0, 4.0], [0.3, 0.4]], dtype=torch.float64)
    out = F.embedding_bag(ids(0, 1), w, ids(0), mode="sum", max_norm=1.0)
    np.testing.assert_allclose(f64(w)[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(f64(out), [[0.9, 1.2]], rtol=1e-6)


def test_embedding_bag_many_variable_length_bags():
    """Thousands of variable-length bags in one call (no per-bag Python loop): sums are right."""
    rng = np.random.default_rng(6)
    lengths = rng.integers(0, 6, size=3000)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    idx = rng.integers(0, 50, size=int(lengths.sum()))
    w = weight(50, 4, seed=7)
    out = f64(F.embedding_bag(torch.tensor(idx), w, torch.tensor(offsets), mode="sum"))
    ref = np.zeros((3000, 4))
    np.add.at(ref, np.repeat(np.arange(3000), lengths), f64(w)[idx])
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


# -- the optional kernel: native vs decomposition ----------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["mixed", "empty_input", "ties", "nan"])
def test_embedding_bag_kernel_native_equals_decomposition(mode, dtype, case):
    """The NumPy kernel and the decomposition agree on out, count and (max) arg."""
    rng = np.random.default_rng(8)
    wt = rng.standard_normal((6, 3)).astype(dtype)
    if case == "mixed":
        idx, offsets = rng.integers(0, 6, size=11), np.array([0, 0, 4, 5, 5, 9, 11])
    elif case == "empty_input":
        idx, offsets = np.zeros(0, dtype=np.int64), np.array([0, 0])
    elif case == "ties":
        wt = np.round(wt)                      # many equal values: ties in max
        idx, offsets = np.array([2, 2, 1, 3, 3, 0]), np.array([0, 3])
    else:
        wt[1, 0] = wt[4, 2] = np.nan           # NaN propagates through max (and sums)
        idx, offsets = np.array([0, 1, 2, 1, 4, 3, 4]), np.array([0, 2, 4])
    idx, offsets = idx.astype(np.int64), offsets.astype(np.int64)
    psw = rng.standard_normal(idx.shape[0]).astype(dtype) if mode == "sum" else None
    native = np_norm.embedding_bag(wt, idx, offsets, psw, mode)
    decomposed = DECOMPOSITIONS["embedding_bag"](torch.zeros(1)._k, wt, idx, offsets, psw, mode)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(native[0], decomposed[0], **tol)
    assert native[0].dtype == decomposed[0].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(native[1], decomposed[1])
    assert native[1].dtype == decomposed[1].dtype == np.int64
    if mode == "max":
        np.testing.assert_array_equal(native[2], decomposed[2])
    else:
        assert native[2] is None and decomposed[2] is None
    ref = manual_bags(torch.tensor(wt.astype(np.float64)), idx, offsets, mode, psw)
    np.testing.assert_allclose(native[0], ref, **tol)           # (NaN positions must agree too)


def test_embedding_bag_through_decomposition_end_to_end(monkeypatch):
    """F.embedding_bag with the decomposition in the kernel table gives the same values and gradients."""
    import functools
    k = torch.zeros(1)._k
    w = weight(6, 3, seed=9, requires_grad=True)
    idx, off = ids(1, 3, 0, 3, 4, 2, 5), ids(0, 2, 2, 6)
    results = []
    for use_decomposition in (False, True):
        if use_decomposition:
            monkeypatch.setitem(k, "embedding_bag", functools.partial(DECOMPOSITIONS["embedding_bag"], k))
        outs = [F.embedding_bag(idx, w, off, mode=m) for m in ("sum", "mean", "max")]
        grads = torch.autograd.grad(sum((o * o).sum() for o in outs), w)
        results.append([f64(o) for o in outs] + [f64(grads[0])])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# -- modules -----------------------------------------------------------------------------------------------
def test_embedding_bag_module():
    torch.manual_seed(1)
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    assert f64(m.weight)[0].tolist() == [0.0] * 3
    out = m(ids(1, 2, 0, 4), ids(0, 2))
    np.testing.assert_allclose(f64(out), manual_bags(m.weight, [1, 2, 0, 4], [0, 2], "sum", padding_idx=0),
                               rtol=1e-6)
    psw = torch.tensor([1.0, 2.0, 3.0, 4.0])
    out = m(ids(1, 2, 0, 4), ids(0, 2), per_sample_weights=psw)
    np.testing.assert_allclose(f64(out), manual_bags(m.weight, [1, 2, 0, 4], [0, 2], "sum", f64(psw), 0), rtol=1e-6)
    out.sum().backward()
    assert m.weight.grad.shape == (10, 3)
    pre = nn.EmbeddingBag.from_pretrained(torch.eye(3), mode="max")
    assert not pre.weight.requires_grad
    assert pre(torch.tensor([[0, 2]])).tolist() == [[1.0, 0.0, 1.0]]


@pytest.mark.parametrize("m, text", [
    (nn.Embedding(10, 3), "Embedding(10, 3)"),
    (nn.Embedding(10, 3, padding_idx=0, max_norm=1.0), "Embedding(10, 3, padding_idx=0, max_norm=1.0)"),
    (nn.Embedding(10, 3, max_norm=2, norm_type=3, scale_grad_by_freq=True, sparse=True),
     "Embedding(10, 3, max_norm=2, norm_type=3, scale_grad_by_freq=True, sparse=True)"),
    (nn.EmbeddingBag(10, 3), "EmbeddingBag(10, 3, mode='mean')"),
    (nn.EmbeddingBag(10, 3, mode="sum"), "EmbeddingBag(10, 3, mode='sum')"),
    (nn.EmbeddingBag(10, 3, max_norm=2, scale_grad_by_freq=True, padding_idx=2),
     "EmbeddingBag(10, 3, max_norm=2, scale_grad_by_freq=True, mode='mean', padding_idx=2)"),
])
def test_reprs(m, text):
    assert repr(m) == text
