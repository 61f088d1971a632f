"""Sparse COO tensors: construction, conversion, coalescing, arithmetic, products, reductions, printing
and errors, against scipy.sparse / dense NumPy float64 references."""
import io

import numpy as np
import pytest
import scipy.sparse as sp

import tensorplug as torch

I = [[0, 1, 1, 0], [2, 0, 2, 2]]            # (0, 2) twice: uncoalesced
V = [3.0, 4.0, 5.0, 1.0]
DENSE = np.array([[0.0, 0.0, 4.0], [4.0, 0.0, 5.0]])


def _s(dtype=torch.float64, **kw):
    return torch.sparse_coo_tensor(I, torch.tensor(V, dtype=dtype), (2, 3), **kw)


def _random(rng, m, n, nnz, dtype=torch.float64):
    rows, cols = rng.integers(0, m, nnz), rng.integers(0, n, nnz)
    vals = rng.standard_normal(nnz)
    s = torch.sparse_coo_tensor(np.stack([rows, cols]), torch.tensor(vals, dtype=dtype), (m, n))
    return s, sp.coo_matrix((vals, (rows, cols)), shape=(m, n)).toarray()


def test_metadata():
    """layout, is_sparse, shape, nnz, sparse/dense dims as PyTorch reports them."""
    s = _s()
    assert s.is_sparse and s.layout is torch.sparse_coo and not torch.ones(2).is_sparse
    assert torch.ones(2).layout is torch.strided
    assert s.shape == torch.Size([2, 3]) and s.size(1) == 3 and s.dim() == 2 and s.numel() == 6
    assert (s._nnz(), s.sparse_dim(), s.dense_dim(), s.is_coalesced()) == (4, 2, 0, False)
    assert s.dtype is torch.float64 and s.device == torch.device("cpu")
    h = torch.sparse_coo_tensor(I, torch.ones(4, 2), (2, 3, 2))
    assert (h.sparse_dim(), h.dense_dim()) == (2, 1)


def test_to_dense_sums_duplicates():
    """to_dense adds duplicate entries up."""
    np.testing.assert_array_equal(_s().to_dense().numpy(), DENSE)


def test_size_inferred_and_numpy_indices():
    """size defaults to max index + 1; int32 NumPy indices and a dtype argument work (gcn builds it so)."""
    s = torch.sparse_coo_tensor(np.array([[0, 2], [1, 0]], dtype=np.int32), torch.ones(2), dtype=torch.int64)
    assert s.shape == (3, 2) and s.dtype is torch.int64 and s._indices().dtype is torch.int64
    np.testing.assert_array_equal(s.to_dense().numpy(), [[0, 1], [0, 0], [1, 0]])


def test_coalesce_against_scipy():
    """coalesce: distinct positions in row-major order, duplicates summed (as scipy's sum_duplicates)."""
    rng = np.random.default_rng(0)
    s, ref = _random(rng, 30, 20, 200)
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    m = sp.coo_matrix(ref)
    m.sum_duplicates()
    np.testing.assert_array_equal(c.indices().numpy(), np.stack([m.row, m.col]))
    np.testing.assert_allclose(c.values().numpy(), m.data, rtol=1e-12)
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()


def test_coalesce_dense_dims():
    """Entries with dense dims are summed per dense position."""
    vals = np.arange(8.0).reshape(4, 2)
    c = torch.sparse_coo_tensor(I, torch.tensor(vals), (2, 3, 2)).coalesce()
    np.testing.assert_array_equal(c.values().numpy(), [[6.0, 8.0], [2.0, 3.0], [4.0, 5.0]])


def test_to_sparse_roundtrip():
    """to_sparse keeps the nonzeros (coalesced); to_sparse(sparse_dim) keeps dense trailing dims."""
    x = np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 3.0]])
    s = torch.tensor(x).to_sparse()
    assert s.is_coalesced() and s._nnz() == 3 and s.to_sparse() is s and torch.tensor(x).to_sparse_coo()._nnz() == 3
    np.testing.assert_array_equal(s.indices().numpy(), [[0, 1, 1], [1, 0, 2]])
    np.testing.assert_array_equal(s.to_dense().numpy(), x)
    y = np.zeros((3, 2, 2))
    y[1, 0, 1] = 2.0
    h = torch.tensor(y).to_sparse(1)
    assert (h.sparse_dim(), h.dense_dim(), h._nnz()) == (1, 2, 1)
    np.testing.assert_array_equal(h.to_dense().numpy(), y)


@pytest.mark.parametrize("m,k,n,nnz", [(40, 30, 5, 150), (7, 9, 1, 0), (5, 5, 3, 1)])
def test_mm_against_scipy(m, k, n, nnz):
    """sparse @ dense through mm, matmul, @, spmm, sparse.mm and addmm equals scipy's product."""
    rng = np.random.default_rng(m)
    s, ref = _random(rng, m, k, nnz)
    d = rng.standard_normal((k, n))
    want = sp.csr_matrix(ref) @ d
    D = torch.tensor(d)
    for got in (torch.mm(s, D), torch.matmul(s, D), s @ D, torch.spmm(s, D), torch.sparse.mm(s, D), s.mm(D)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    b = rng.standard_normal((m, n))
    got = torch.sparse.addmm(torch.tensor(b), s, D, beta=2.0, alpha=0.5)
    np.testing.assert_allclose(got.numpy(), 2 * b + 0.5 * want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(torch.addmm(torch.tensor(b), s, D).numpy(), b + want, rtol=1e-12, atol=1e-12)


def test_dense_times_sparse_and_vectors():
    """dense @ sparse, sparse @ vector and sparse @ sparse (a sparse result) match dense products."""
    rng = np.random.default_rng(1)
    s, ref = _random(rng, 6, 4, 12)
    a = rng.standard_normal((3, 6))
    np.testing.assert_allclose((torch.tensor(a) @ s).numpy(), a @ ref, rtol=1e-12)
    np.testing.assert_allclose(torch.mm(torch.tensor(a), s).numpy(), a @ ref, rtol=1e-12)
    v = rng.standard_normal(4)
    np.testing.assert_allclose((s @ torch.tensor(v)).numpy(), ref @ v, rtol=1e-12)
    ss = s @ s.t()
    assert ss.is_sparse
    np.testing.assert_allclose(ss.to_dense().numpy(), ref @ ref.T, rtol=1e-12, atol=1e-12)


def test_mm_integer():
    """Integer sparse products stay integer."""
    s = _s(torch.int64)
    got = torch.mm(s, torch.ones(3, 2, dtype=torch.int64))
    assert got.dtype is torch.int64
    np.testing.assert_array_equal(got.numpy(), DENSE.sum(1, keepdims=True).repeat(2, 1))


def test_transpose_neg_mul_div():
    """t, transpose, neg, mul / div by a scalar act on the dense values."""
    s = _s()
    np.testing.assert_array_equal(s.t().to_dense().numpy(), DENSE.T)
    np.testing.assert_array_equal(s.transpose(0, 1).to_dense().numpy(), DENSE.T)
    assert s.t().shape == (3, 2) and not s.coalesce().t().is_coalesced()
    np.testing.assert_array_equal((-s).to_dense().numpy(), -DENSE)
    np.testing.assert_array_equal(s.neg().to_dense().numpy(), -DENSE)
    np.testing.assert_array_equal((s * 2.5).to_dense().numpy(), DENSE * 2.5)
    np.testing.assert_array_equal((2 * s).to_dense().numpy(), DENSE * 2)
    np.testing.assert_array_equal(s.mul(torch.tensor(3.0, dtype=torch.float64)).to_dense().numpy(), DENSE * 3)
    np.testing.assert_array_equal((s / 2).to_dense().numpy(), DENSE / 2)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 sparse and 0 dense"):
        torch.sparse_coo_tensor([[0], [0], [0]], torch.ones(1), (2, 2, 2)).t()


def test_add():
    """sparse + sparse (coalesced when both are), dense + sparse (dense, promoted); PyTorch's errors."""
    rng = np.random.default_rng(2)
    a, ra = _random(rng, 5, 4, 8)
    b, rb = _random(rng, 5, 4, 6)
    np.testing.assert_allclose((a + b).to_dense().numpy(), ra + rb, rtol=1e-12)
    np.testing.assert_allclose(a.add(b, alpha=2).to_dense().numpy(), ra + 2 * rb, rtol=1e-12)
    np.testing.assert_allclose((a - b).to_dense().numpy(), ra - rb, rtol=1e-12)
    assert (a.coalesce() + b.coalesce()).is_coalesced() and not (a + b).is_coalesced()
    d = torch.eye(5, 4) + a
    assert not d.is_sparse and d.dtype is torch.float64
    np.testing.assert_allclose(d.numpy(), np.eye(5, 4) + ra, rtol=1e-12)
    assert (torch.ones(2, 3) + _s(torch.int64)).dtype is torch.float32
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use add\(dense, sparse\)"):
        a + torch.ones(5, 4)
    with pytest.raises(RuntimeError, match=r"expected sizes of 'self' and 'other' to match, but \[5, 4\] != \[2, 3\]"):
        a + _s()
    with pytest.raises(RuntimeError, match="dense-sparse addition does not currently support broadcasting"):
        torch.ones(4) + a


def test_sum():
    """sparse.sum over everything (dense 0-d), over sparse dims (sparse, or dense when none remain)."""
    s = _s()
    assert float(torch.sparse.sum(s)) == DENSE.sum() and float(s.sum()) == DENSE.sum()
    r = torch.sparse.sum(s, 0)
    assert r.is_sparse and r.is_coalesced()
    np.testing.assert_array_equal(r.to_dense().numpy(), DENSE.sum(0))
    np.testing.assert_array_equal(torch.sparse.sum(s, 1).to_dense().numpy(), DENSE.sum(1))
    h = torch.sparse_coo_tensor(I, torch.tensor(np.arange(8.0).reshape(4, 2)), (2, 3, 2))
    hd = h.to_dense().numpy()
    np.testing.assert_array_equal(torch.sparse.sum(h, (0, 1)).numpy(), hd.sum((0, 1)))
    np.testing.assert_array_equal(torch.sparse.sum(h, 2).to_dense().numpy(), hd.sum(2))


def _softmax_ref(dense, mask, dim, log):
    x = np.where(mask, dense, -np.inf)
    m = x.max(axis=dim, keepdims=True)
    e = np.where(mask, np.exp(x - m), 0.0)
    sm = e / e.sum(axis=dim, keepdims=True)
    return np.where(mask, np.log(np.where(mask, sm, 1.0)) if log else sm, 0.0)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_over_stored_entries(dim, log):
    """sparse.softmax / log_softmax normalise over the stored entries only (absent ones are -inf)."""
    rng = np.random.default_rng(3)
    s, _ = _random(rng, 6, 5, 14)
    c = s.coalesce()
    dense = c.to_dense().numpy()
    mask = np.zeros_like(dense, dtype=bool)
    mask[tuple(c.indices().numpy())] = True
    f = torch.sparse.log_softmax if log else torch.sparse.softmax
    got = f(s, dim)
    assert got.is_sparse and got.is_coalesced()
    np.testing.assert_allclose(got.to_dense().numpy(), _softmax_ref(dense, mask, dim % 2, log), rtol=1e-12, atol=1e-12)


def test_to_clone_detach():
    """to(dtype), double(), clone and detach keep the pattern; requires_grad_ works on a sparse leaf."""
    s = _s(torch.float32)
    d = s.to(torch.float64)
    assert d.is_sparse and d.dtype is torch.float64 and s.double().dtype is torch.float64
    assert s.to("cpu") is s and s.to(torch.float32) is s
    np.testing.assert_array_equal(d.to_dense().numpy(), DENSE)
    c = s.clone()
    assert c._values() is not s._values() and c.is_coalesced() == s.is_coalesced()
    np.testing.assert_array_equal(c.to_dense().numpy(), DENSE)
    r = s.requires_grad_()
    assert r is s and s.requires_grad and not s.detach().requires_grad and s.detach().is_sparse


def test_printing():
    """repr as PyTorch prints a sparse tensor (indices, values, size, nnz, dtype, layout, grad state)."""
    assert repr(_s(torch.float32)) == (
        "tensor(indices=tensor([[0, 1, 1, 0],\n"
        "                       [2, 0, 2, 2]]),\n"
        "       values=tensor([3., 4., 5., 1.]),\n"
        "       size=(2, 3), nnz=4, layout=tensorplug.sparse_coo)")
    e = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 3), requires_grad=True)
    assert repr(e) == ("tensor(indices=tensor([], size=(2, 0)),\n"
                       "       values=tensor([], size=(0,)),\n"
                       "       size=(2, 3), nnz=0, layout=tensorplug.sparse_coo, requires_grad=True)")
    assert "dtype=tensorplug.float64" in repr(_s())


def test_save_load():
    """tensorplug.save / load round-trip a sparse tensor."""
    buf = io.BytesIO()
    torch.save({"adj": _s()}, buf)
    buf.seek(0)
    back = torch.load(buf)["adj"]
    assert back.is_sparse and back.shape == (2, 3) and back._nnz() == 4
    np.testing.assert_array_equal(back.to_dense().numpy(), DENSE)


def test_construction_errors():
    """PyTorch's errors for inconsistent indices, values and size."""
    with pytest.raises(RuntimeError, match="indices and values must have same nnz, but got nnz from indices: 2, "
                                           "nnz from values: 3"):
        torch.sparse_coo_tensor([[0, 1]], torch.ones(3), (3,))
    with pytest.raises(RuntimeError, match="'len\\(size\\) == sparse_dim \\+ dense_dim' is not satisfied: "
                                           "len\\(size\\) = 2, sparse_dim = 1, dense_dim = 0"):
        torch.sparse_coo_tensor([[0, 1]], torch.ones(2), (3, 2))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size is 3 but found index 5"):
        torch.sparse_coo_tensor([[0, 5]], torch.ones(2), (3,))
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        torch.sparse_coo_tensor([[0, -1]], torch.ones(2), (3,))
    with pytest.raises(RuntimeError, match="addmm: Argument #3 \\(dense\\): Expected dim 0 size 3, got 2"):
        torch.mm(_s(), torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        torch.mm(_s(torch.float32), torch.ones(3, 2, dtype=torch.float64))


@pytest.mark.parametrize("op", [lambda s: s.exp(), lambda s: torch.exp(s), lambda s: s.view(6), lambda s: s.max(),
                                lambda s: s > 0, lambda s: s == s, lambda s: s.mean(), lambda s: s.argmax()])
def test_unsupported_ops_raise(op):
    """Ops PyTorch does not run on sparse tensors raise its NotImplementedError naming the Sparse backend."""
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        op(_s(torch.float32))


def test_numpy_conversion_errors():
    """numpy() of a sparse tensor raises PyTorch's TypeError."""
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy. Use Tensor.to_dense\\(\\) first."):
        _s().numpy()


def test_functional_add_sub_mul_div_take_sparse_operands():
    tp = torch
    """torch.add / sub / mul / div as functions accept sparse COO operands as the operators do."""
    i = tp.tensor([[0, 1, 1], [1, 0, 1]])
    s = tp.sparse_coo_tensor(i, tp.tensor([1., 2., 3.]), (2, 2))
    dense = np.array([[0., 1.], [2., 3.]])
    assert tp.add(s, s).is_sparse and np.array_equal(tp.add(s, s).to_dense().numpy(), 2 * dense)
    assert np.array_equal(tp.add(s, s, alpha=2).to_dense().numpy(), 3 * dense)
    assert np.array_equal(tp.sub(s, s).to_dense().numpy(), 0 * dense)
    assert np.array_equal(tp.mul(s, 2).to_dense().numpy(), 2 * dense)
    assert np.array_equal(tp.div(s, 2).to_dense().numpy(), dense / 2)
    r = tp.add(tp.ones(2, 2), s)
    assert not r.is_sparse and np.array_equal(r.numpy(), dense + 1)
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        tp.add(s, tp.ones(2, 2))
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        tp.exp(s)
