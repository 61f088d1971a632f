"""The CUDA backend's sparse COO kernels (backends/cuda_backend/sparse.py) over the NumPy-based CuPy
stand-in: sparse_coalesce, sparse_mm (the cupyx.scipy.sparse path and the scatter-add path) and
sparse_softmax give the NumPy backend's results and match float64 references. This checks the
kernels' logic on the CPU, not CuPy or a GPU (the conformance run on "cuda" does that)."""
import numpy as np
import pytest
from _standin import make_standin

import fake_cupy
import tensorplug as torch
from tensorplug.backends.numpy_backend import sparse as np_sparse

TOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13, "complex64": 2e-6}


@pytest.fixture
def k(standin_state):
    return make_standin().kernels


def dev(a):
    return fake_cupy.asarray(np.asarray(a))


def host(a):
    return fake_cupy.asnumpy(a)


def entries(rng, sizes, nnz, dense=(), dtype="float64"):
    """Unsorted index columns with duplicates (the last three repeat the first three)."""
    idx = np.stack([rng.integers(0, s, nnz) for s in sizes]).astype(np.int64).reshape(len(sizes), nnz)
    if nnz > 6:
        idx[:, -3:] = idx[:, :3]
    if dtype == "bool":
        vals = rng.random((nnz,) + dense) < 0.5
    elif np.dtype(dtype).kind in "iu":
        vals = rng.integers(-9, 10, (nnz,) + dense).astype(dtype)
    elif np.dtype(dtype).kind == "c":
        vals = (rng.uniform(-3, 3, (nnz,) + dense) + 1j * rng.uniform(-3, 3, (nnz,) + dense)).astype(dtype)
    else:
        vals = rng.uniform(-3, 3, (nnz,) + dense).astype(dtype)
    return idx, vals


def close(got, want, dtype):
    tol = TOL.get(np.dtype(dtype).name, 0)
    np.testing.assert_allclose(np.asarray(got, dtype=np.complex128), np.asarray(want, dtype=np.complex128),
                               rtol=tol, atol=tol, equal_nan=True)


def coalesce_ref(idx, vals):
    """float64 (or exact integer) sums per distinct column, columns in row-major order."""
    acc = {}
    for j in range(idx.shape[1]):
        key = tuple(int(i) for i in idx[:, j])
        acc[key] = acc.get(key, 0) + vals[j].astype(np.complex128 if vals.dtype.kind == "c" else
                                                    np.float64 if vals.dtype.kind == "f" else np.int64)
    keys = sorted(acc)
    return np.array(keys, dtype=np.int64).T.reshape(idx.shape[0], len(keys)), np.array([acc[q] for q in keys])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64", "complex64"])
@pytest.mark.parametrize("sizes, nnz, dense", [((5, 7), 40, ()), ((4,), 12, ()), ((3, 4, 5), 30, (2, 3)),
                                               ((6, 6), 1, (4,)), ((2, 3), 0, ())])
def test_coalesce_matches_the_numpy_kernel(k, dtype, sizes, nnz, dense):
    """Distinct columns in row-major order (exactly the NumPy kernel's), duplicates summed."""
    rng = np.random.default_rng(nnz)
    idx, vals = entries(rng, sizes, nnz, dense, dtype)
    gi, gv = k["sparse_coalesce"](dev(idx), dev(vals), sizes)
    wi, wv = np_sparse.sparse_coalesce(idx, vals, sizes)
    assert gi.dtype == np.int64 and gv.dtype == np.dtype(dtype) and gv.shape == wv.shape
    np.testing.assert_array_equal(host(gi), wi)
    if nnz:
        ri, rv = coalesce_ref(idx, vals)
        np.testing.assert_array_equal(host(gi), ri)
        if np.dtype(dtype).kind in "iu":
            np.testing.assert_array_equal(host(gv), rv.astype(dtype))       # wraps alike
        else:
            close(host(gv), rv, dtype)
    close(host(gv), wv, dtype)


def test_coalesce_of_bools_is_a_logical_or(k):
    idx = np.array([[2, 0, 2, 1, 0]], dtype=np.int64)
    vals = np.array([True, False, False, False, False])
    gi, gv = k["sparse_coalesce"](dev(idx), dev(vals), (3,))
    assert host(gi).tolist() == [[0, 1, 2]] and host(gv).tolist() == [False, False, True]


def test_coalesce_without_sparse_dims_sums_everything(k):
    vals = np.arange(12, dtype=np.float64).reshape(4, 3)
    gi, gv = k["sparse_coalesce"](dev(np.zeros((0, 4), np.int64)), dev(vals), ())
    assert host(gi).shape == (0, 1)
    np.testing.assert_array_equal(host(gv), vals.sum(0, keepdims=True))


def mm_ref(idx, vals, m, d):
    y = np.zeros((m, d.shape[1]), dtype=np.complex128 if d.dtype.kind == "c" else np.float64)
    for j in range(idx.shape[1]):
        y[idx[0, j]] += vals[j] * d[idx[1, j]].astype(y.dtype)
    return y


@pytest.fixture
def coo_calls(monkeypatch):
    """How many cupyx.scipy.sparse.coo_matrix the kernels build."""
    calls = []
    real = fake_cupy._CooMatrix

    class Counting(real):
        def __init__(self, *a, **kw):
            calls.append(a[0][0].dtype.name)
            super().__init__(*a, **kw)
    monkeypatch.setattr(fake_cupy.cupyx.scipy.sparse, "coo_matrix", Counting)
    return calls


@pytest.mark.parametrize("dtype, cusparse", [("float32", True), ("float64", True), ("complex64", True),
                                             ("float16", False), ("int32", False), ("int64", False)])
@pytest.mark.parametrize("layout", ["C", "T", "S"])
def test_mm_matches_the_numpy_kernel(k, coo_calls, dtype, cusparse, layout):
    """cuSPARSE's dtypes go through cupyx.scipy.sparse (COO -> CSR sums the duplicates), the others
    through gathered products and scatter-adds; dense may be transposed or strided."""
    rng = np.random.default_rng(3)
    m, kk, n = 6, 5, 4
    idx, vals = entries(rng, (m, kk), 25, (), dtype)
    full = entries(rng, (1,), kk * n * 2, (), dtype)[1].reshape(kk, n * 2)
    if layout == "C":
        d, dd = full[:, :n].copy(), dev(full[:, :n].copy())
    elif layout == "T":                      # a transposed view of a (n, kk) array
        d, dd = full[:, :n].copy(), dev(full[:, :n].T.copy()).T
    else:                                    # every other column
        d, dd = full[:, ::2], dev(full)[:, ::2]
    np.testing.assert_array_equal(host(dd), d)
    y = k["sparse_mm"](dev(idx), dev(vals), m, dd)
    assert y.dtype == np.dtype(dtype) and y.shape == (m, n) and y.flags.c_contiguous
    assert coo_calls == ([dtype] if cusparse else [])
    want = np_sparse.sparse_mm(idx, vals, m, d)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(host(y), want)
        np.testing.assert_array_equal(host(y), mm_ref(idx, vals, m, d).real.astype(dtype))
    else:
        close(host(y), want, dtype)
        close(host(y), mm_ref(idx, vals, m, d), dtype)


def test_mm_without_cupyx_sparse_takes_the_scatter_path(standin_state, monkeypatch):
    """A cupyx-like module without scipy.sparse: every dtype through the scatter-add path."""
    import types
    cx = types.SimpleNamespace(**{n: v for n, v in vars(fake_cupy.cupyx).items() if n != "scipy"})
    from tensorplug.backends.cuda_backend import CudaBackend
    kt = CudaBackend(modules=lambda: (fake_cupy, cx), name="nosp", device_type="nospcuda").kernels
    rng = np.random.default_rng(5)
    idx, vals = entries(rng, (4, 3), 10)
    d = rng.uniform(-2, 2, (3, 5))
    close(host(kt["sparse_mm"](dev(idx), dev(vals), 4, dev(d))), mm_ref(idx, vals, 4, d), "float64")


def test_mm_of_empty_operands_is_zeros(k, coo_calls):
    y = k["sparse_mm"](dev(np.zeros((2, 0), np.int64)), dev(np.zeros(0)), 3, dev(np.ones((4, 2))))
    assert host(y).tolist() == [[0.0, 0.0]] * 3
    y = k["sparse_mm"](dev(np.array([[0], [1]])), dev(np.ones(1)), 2, dev(np.ones((2, 0))))
    assert host(y).shape == (2, 0) and coo_calls == []


def softmax_ref(idx, vals, dim, log):
    groups = {}
    for j in range(idx.shape[1]):
        groups.setdefault(tuple(int(idx[d, j]) for d in range(idx.shape[0]) if d != dim), []).append(j)
    out = np.zeros(vals.shape)
    for js in groups.values():
        v = vals[js].astype(np.float64)
        sh = v - v.max(0)
        out[js] = sh - np.log(np.exp(sh).sum(0)) if log else np.exp(sh) / np.exp(sh).sum(0)
    return out


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("sizes, nnz, dense, dim", [((5, 6), 20, (), 1), ((5, 6), 20, (), 0), ((7,), 5, (), 0),
                                                    ((3, 4, 5), 25, (2,), 1), ((3, 4), 0, (), 1)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_the_numpy_kernel(k, standin_state, dtype, sizes, nnz, dense, dim, log):
    """Softmax over each group of entries agreeing in every sparse dim but dim, with no host sync
    (given a CuPy whose scatter_add takes every float dtype, as CuPy 14's does)."""
    fake_cupy.reset(scatter_add=("float16", "float32", "float64", "int32", "uint32", "uint64"))
    rng = np.random.default_rng(nnz + dim)
    idx, vals = entries(rng, sizes, nnz, dense, dtype)
    idx, _ = np_sparse.sparse_coalesce(idx, np.zeros(nnz), sizes)       # the kernel takes coalesced indices
    vals = vals[:idx.shape[1]] * 2
    di, dv = dev(idx), dev(vals)
    got = k["sparse_softmax"](di, dv, sizes, dim, log)
    assert fake_cupy.state().d2h == 0
    assert got.dtype == np.dtype(dtype) and got.shape == vals.shape
    close(host(got), np_sparse.sparse_softmax(idx, vals, sizes, dim, log), dtype)
    close(host(got), softmax_ref(idx, vals, dim, log), dtype)


def test_softmax_propagates_nan_and_inf_like_the_numpy_kernel(k):
    idx = np.array([[0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1]], dtype=np.int64)
    vals = np.array([np.nan, 1.0, np.inf, 2.0, -np.inf, -np.inf], dtype=np.float32)
    for log in (False, True):
        got = host(k["sparse_softmax"](dev(idx), dev(vals), (3, 2), 1, log))
        np.testing.assert_array_equal(got, np_sparse.sparse_softmax(idx, vals, (3, 2), 1, log))
        assert np.isnan(got).all()


def test_frontend_sparse_ops_on_the_standin_match_cpu(fakecuda):
    """torch.sparse on "fakecuda" (coalesce, mm with its gradients, softmax) equals cpu."""
    i = torch.tensor([[0, 2, 1, 0, 2], [1, 0, 2, 1, 2]])
    v = torch.tensor([1.0, -2.0, 3.0, 0.5, 4.0], dtype=torch.float64)
    d = torch.tensor(np.random.default_rng(0).uniform(-1, 1, (3, 4)))
    outs = {}
    for where in ("cpu", "fakecuda"):
        s = torch.sparse_coo_tensor(i.to(where), v.to(where), (3, 3))
        dd = d.detach().to(where).requires_grad_()
        y = torch.sparse.mm(s, dd)
        y.sum().backward()
        c = s.coalesce()
        sm = torch.sparse.softmax(c, 1)
        outs[where] = [c.indices(), c.values(), y.detach(), dd.grad, sm.coalesce().values()]
    for a, b in zip(outs["cpu"], outs["fakecuda"]):
        assert b.device.type == "fakecuda"
        np.testing.assert_allclose(b.cpu().numpy(), a.numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(outs["cpu"][0].numpy(), [[0, 1, 2, 2], [1, 2, 0, 2]])
