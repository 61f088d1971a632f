"""Linear algebra: values against float64 NumPy, PyTorch's error messages, and first and second
gradients against finite differences (tensorplug.autograd.gradcheck / gradgradcheck)."""
import math

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.linalg  # noqa: F401  (until "linalg" is in tensorplug._LAZY_MODULES)
from tensorplug.autograd import gradcheck, gradgradcheck

LA = torch.linalg


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def rnd(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def T(arr, dtype=torch.float64, requires_grad=False):
    return torch.tensor(np.asarray(arr), dtype=dtype, requires_grad=requires_grad)


def well(n, *batch, seed=0):
    """Well-conditioned (batches of) n x n matrices as host arrays."""
    return rnd(*batch, n, n, seed=seed) * 0.5 + n * np.eye(n)


def noncontig(arr, dtype=torch.float64, requires_grad=False):
    """A tensor (2-D or more) with arr's values whose layout is transposed (made by permute)."""
    arr = np.asarray(arr)
    n = arr.ndim
    perm = list(range(n - 2)) + [n - 1, n - 2]
    t = T(np.ascontiguousarray(np.swapaxes(arr, -1, -2)), dtype).permute(*perm)
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


MATMUL_CASES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((5, 1, 2, 3), (4, 3, 2)),
    ((2, 1, 2, 3), (1, 3, 3, 4)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
    ((2, 4, 2, 3), (3,)),
    ((0, 3), (3, 2)),
    ((2, 0), (0, 3)),
    ((4, 0, 2, 3), (3, 2)),
]


# -- matmul values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", MATMUL_CASES)
def test_matmul_values(sa, sb):
    a, b = rnd(*sa, seed=1), rnd(*sb, seed=2)
    r = torch.matmul(T(a), T(b))
    ref = np.matmul(a, b)
    assert tuple(r.shape) == ref.shape
    np.testing.assert_allclose(f64(r), ref, rtol=1e-12, atol=1e-12)
    # operator and float32
    r32 = T(a, torch.float32) @ T(b, torch.float32)
    assert r32.dtype is torch.float32
    np.testing.assert_allclose(f64(r32), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa,sb", [c for c in MATMUL_CASES if len(c[0]) >= 2 and len(c[1]) >= 2])
def test_matmul_noncontiguous(sa, sb):
    a, b = rnd(*sa, seed=3), rnd(*sb, seed=4)
    ta, tb = noncontig(a), noncontig(b)
    np.testing.assert_allclose(f64(ta @ tb), np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_matmul_integers_exact():
    a = np.arange(24).reshape(2, 3, 4) - 7
    b = np.arange(20).reshape(4, 5) * 3
    for dt in (torch.int64, torch.int32, torch.int16):
        r = torch.matmul(T(a, dt), T(b, dt))
        assert r.dtype is dt
        assert (r.numpy() == np.matmul(a, b)).all()
    v = torch.tensor([1, 2, 3])
    assert torch.dot(v, v).item() == 14 and torch.dot(v, v).dtype is torch.int64
    assert torch.matmul(T([[1, 2], [3, 4]], torch.uint8), T([[1], [1]], torch.uint8)).tolist() == [[3], [7]]


def test_matmul_float16():
    a, b = rnd(2, 3), rnd(3, 2)
    r = torch.matmul(T(a, torch.float16), T(b, torch.float16))
    assert r.dtype is torch.float16
    np.testing.assert_allclose(f64(r), a @ b, atol=1e-2)


def test_matmul_zero_d_result_and_out():
    r = torch.matmul(T([1.0, 2.0]), T([3.0, 4.0]))
    assert r.shape == () and r.item() == 11.0
    out = torch.empty(2, 4, dtype=torch.float64)
    res = torch.matmul(T(rnd(2, 3)), T(rnd(3, 4)), out=out)
    assert res is out
    np.testing.assert_allclose(out.numpy(), rnd(2, 3) @ rnd(3, 4))


def test_rmatmul_with_numpy_array():
    a, b = rnd(2, 3), rnd(3, 4)
    r = a @ T(b)
    assert isinstance(r, torch.Tensor)
    np.testing.assert_allclose(f64(r), a @ b)
    r2 = T(a) @ b
    assert isinstance(r2, torch.Tensor)
    np.testing.assert_allclose(f64(r2), a @ b)
    assert T(a).__rmatmul__(T(rnd(4, 2))).shape == (4, 3)
    with pytest.raises(TypeError):
        T(a) @ "x"


# -- matmul errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb,msg", [
    ((2, 3), (4, 5), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((3,), (4,), r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same number "
                 r"of elements, but got 3 and 4 elements respectively"),
    ((2, 3), (4,), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    ((3,), (4, 5), r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    ((2, 2, 3), (2, 4, 5), r"mat1 and mat2 shapes cannot be multiplied \(2x2x3 and 2x4x5\)"),
    ((2, 3, 4), (5,), r"mat1 and mat2 shapes cannot be multiplied \(2x3x4 and 5\)"),
    ((2, 2, 3), (3, 3, 5), r"\[2, 2, 3\] and \[3, 3, 5\] do not broadcast: The size of tensor a \(2\) must "
                           r"match the size of tensor b \(3\) at non-singleton dimension 0"),
    ((), (3,), r"both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ((3,), (), r"both arguments to matmul need to be at least 1D, but they are 1D and 0D"),
])
def test_matmul_shape_errors(sa, sb, msg):
    with pytest.raises(RuntimeError, match=msg):
        torch.matmul(torch.ones(*sa), torch.ones(*sb))


def test_matmul_dtype_errors():
    with pytest.raises(RuntimeError, match=r"expected m1 and m2 to have the same dtype, but got: float != double"):
        torch.ones(2, 3) @ torch.ones(3, 2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"dot : expected both vectors to have same dtype, but found Float and "
                                           r"Double"):
        torch.ones(3) @ torch.ones(3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.ones(2, 3, dtype=torch.int64) @ torch.ones(3, 2)
    with pytest.raises(NotImplementedError, match="Bool"):
        torch.ones(2, 2, dtype=torch.bool) @ torch.ones(2, 2, dtype=torch.bool)
    with pytest.raises(TypeError):
        torch.matmul(torch.ones(2, 2), [[1.0, 2.0], [3.0, 4.0]])


# -- matmul gradients ------------------------------------------------------------------------------
GRAD_CASES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 2)), ((2, 2, 3), (3, 2)), ((2, 3), (2, 3, 2)),
    ((2, 1, 2, 3), (3, 3, 2)), ((3,), (2, 3, 2)), ((2, 2, 3), (3,)),
]


@pytest.mark.parametrize("sa,sb", GRAD_CASES)
def test_matmul_gradcheck(sa, sb):
    a = T(rnd(*sa, seed=5), requires_grad=True)
    b = T(rnd(*sb, seed=6), requires_grad=True)
    assert gradcheck(torch.matmul, (a, b))
    assert gradgradcheck(torch.matmul, (a, b))


def test_matmul_grad_values_and_partial_requires_grad():
    a = T(rnd(4, 2, 3), requires_grad=True)
    b = T(rnd(3, 5))
    (a @ b).sum().backward()
    np.testing.assert_allclose(f64(a.grad), np.broadcast_to(rnd(3, 5).sum(1), (4, 2, 3)))
    assert b.grad is None
    # gradient of the broadcast operand is summed over the batch
    w = T(rnd(3, 5), requires_grad=True)
    x = T(rnd(4, 2, 3))
    (x @ w).sum().backward()
    np.testing.assert_allclose(f64(w.grad), rnd(4, 2, 3).sum((0, 1))[:, None] * np.ones((3, 5)))
    assert (x @ w).grad_fn.name() == "MatmulBackward0"


def test_matmul_noncontiguous_grad():
    a = noncontig(rnd(2, 3, 4, seed=7), requires_grad=True)
    b = noncontig(rnd(2, 4, 2, seed=8), requires_grad=True)
    assert gradcheck(torch.matmul, (a, b))


def test_matmul_hessian_vector_product():
    # f(x) = x^T A x  ->  grad = (A + A^T) x,  Hessian-vector product = (A + A^T) v
    A = rnd(3, 3, seed=9)
    x = T(rnd(3, seed=10), requires_grad=True)
    f = x @ (T(A) @ x)
    (g,) = torch.autograd.grad(f, x, create_graph=True)
    np.testing.assert_allclose(f64(g), (A + A.T) @ rnd(3, seed=10))
    v = rnd(3, seed=11)
    (hv,) = torch.autograd.grad(g @ T(v), x)
    np.testing.assert_allclose(f64(hv), (A + A.T) @ v)


# -- mm, bmm, mv, dot, outer, inner --------------------------------------------------------------------
def test_mm_bmm_mv_values_and_errors():
    a, b = rnd(2, 3), rnd(3, 4)
    np.testing.assert_allclose(f64(torch.mm(T(a), T(b))), a @ b)
    np.testing.assert_allclose(f64(T(a).mm(T(b))), a @ b)
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        torch.mm(torch.ones(2, 3, 1), torch.ones(3, 5))
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        torch.mm(torch.ones(2, 3), torch.ones(3))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        torch.mm(torch.ones(2, 3), torch.ones(4, 5))
    x, y = rnd(4, 2, 3), rnd(4, 3, 5)
    np.testing.assert_allclose(f64(torch.bmm(T(x), T(y))), x @ y)
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.bmm(torch.ones(2, 3), torch.ones(3, 2))
    with pytest.raises(RuntimeError, match="batch2 must be a 3D tensor"):
        torch.bmm(torch.ones(2, 2, 3), torch.ones(3, 2))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 tensor to be: "
                                           r"\[2, 3\] but got: \[3, 3\]"):
        torch.bmm(torch.ones(2, 2, 3), torch.ones(3, 3, 2))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 3, 2, dtype=torch.float64))
    m, v = rnd(2, 3), rnd(3)
    np.testing.assert_allclose(f64(torch.mv(T(m), T(v))), m @ v)
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"):
        torch.mv(torch.ones(2, 3), torch.ones(4))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 2, 2"):
        torch.mv(torch.ones(2, 3), torch.ones(3, 1))


def test_dot_vdot_values_and_errors():
    a, b = rnd(5, seed=1), rnd(5, seed=2)
    np.testing.assert_allclose(torch.dot(T(a), T(b)).item(), a @ b)
    np.testing.assert_allclose(T(a).vdot(T(b)).item(), np.vdot(a, b))
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"):
        torch.dot(torch.ones(3), torch.ones(4))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        torch.dot(torch.ones(3, 1), torch.ones(4))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but found Float and "
                                           "Double"):
        torch.dot(torch.ones(3), torch.ones(3, dtype=torch.float64))


def test_outer_inner_values_and_errors():
    a, b = rnd(3, seed=1), rnd(4, seed=2)
    np.testing.assert_allclose(f64(torch.outer(T(a), T(b))), np.outer(a, b))
    np.testing.assert_allclose(f64(torch.ger(T(a), T(b))), np.outer(a, b))
    r = torch.outer(torch.tensor([1, 2]), torch.tensor([0.5, 1.0]))      # dtypes promote
    assert r.dtype is torch.float32 and r.tolist() == [[0.5, 1.0], [1.0, 2.0]]
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        torch.outer(torch.ones(3, 2), torch.ones(4))
    x, y = rnd(2, 3, 4, seed=3), rnd(5, 4, seed=4)
    np.testing.assert_allclose(f64(torch.inner(T(x), T(y))), np.inner(x, y))
    np.testing.assert_allclose(f64(torch.inner(T(2.0), T(y))), 2 * y)
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match on both input tensors but "
                                           r"got shapes \[2, 3\] and \[4\]"):
        torch.inner(torch.ones(2, 3), torch.ones(4))


@pytest.mark.parametrize("fn,shapes", [
    (torch.mm, [(2, 3), (3, 2)]),
    (torch.bmm, [(2, 2, 3), (2, 3, 2)]),
    (torch.mv, [(2, 3), (3,)]),
    (torch.dot, [(3,), (3,)]),
    (torch.outer, [(3,), (2,)]),
    (torch.inner, [(2, 3), (2, 3)]),
])
def test_products_gradcheck(fn, shapes):
    xs = [T(rnd(*s, seed=i + 20), requires_grad=True) for i, s in enumerate(shapes)]
    assert gradcheck(fn, xs)
    assert gradgradcheck(fn, xs)


# -- add*mm ----------------------------------------------------------------------------------------------
def test_addmm_family_values():
    inp, m1, m2 = rnd(3, seed=1), rnd(2, 4, seed=2), rnd(4, 3, seed=3)
    np.testing.assert_allclose(f64(torch.addmm(T(inp), T(m1), T(m2))), inp + m1 @ m2)
    np.testing.assert_allclose(f64(torch.addmm(T(inp), T(m1), T(m2), beta=0.5, alpha=2.0)),
                               0.5 * inp + 2 * (m1 @ m2))
    nan_in = T(np.full((2, 3), np.nan))
    np.testing.assert_allclose(f64(torch.addmm(nan_in, T(m1), T(m2), beta=0)), m1 @ m2)
    v = rnd(4, seed=4)
    np.testing.assert_allclose(f64(torch.addmv(T(rnd(2)), T(m1), T(v), alpha=3)), rnd(2) + 3 * m1 @ v)
    np.testing.assert_allclose(f64(torch.addr(T(m1), T(rnd(2)), T(v))), m1 + np.outer(rnd(2), v))
    b1, b2 = rnd(5, 2, 4, seed=5), rnd(5, 4, 3, seed=6)
    np.testing.assert_allclose(f64(torch.baddbmm(T(inp), T(b1), T(b2), beta=2)), 2 * inp + b1 @ b2)
    np.testing.assert_allclose(f64(torch.addbmm(T(inp), T(b1), T(b2))), inp + (b1 @ b2).sum(0))
    # in-place
    t = T(rnd(2, 3))
    t.addmm_(T(m1), T(m2), alpha=2)
    np.testing.assert_allclose(f64(t), rnd(2, 3) + 2 * (m1 @ m2))
    i = torch.tensor([[1, 2]])
    assert torch.addmm(i, torch.tensor([[1, 1]]).reshape(2, 1), torch.tensor([[2, 3]])).tolist() == [[3, 5], [3, 5]]
    r = torch.addmm(i, torch.tensor([[1], [1]]), torch.tensor([[2, 3]]), alpha=2.0, beta=3)
    assert r.dtype is torch.int64 and r.tolist() == [[7, 12], [7, 12]]


def test_addmm_family_errors():
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the existing size "
                                           r"\(4\) at non-singleton dimension 0"):
        torch.addmm(torch.ones(4, 3), torch.ones(2, 3), torch.ones(3, 3))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.addmm(torch.ones(3, dtype=torch.float64), torch.ones(2, 3), torch.ones(3, 3))
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have same number of batches, got 4 and 5"):
        torch.addbmm(torch.ones(2, 3), torch.ones(4, 2, 3), torch.ones(5, 3, 3))
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha"):
        torch.addmm(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.int64),
                     torch.ones(2, 2, dtype=torch.int64), alpha=0.5)


def test_addmm_family_gradcheck():
    inp = T(rnd(3, seed=1), requires_grad=True)
    m1 = T(rnd(2, 4, seed=2), requires_grad=True)
    m2 = T(rnd(4, 3, seed=3), requires_grad=True)
    f = lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=-1.5)  # noqa: E731
    assert gradcheck(f, (inp, m1, m2))
    assert gradgradcheck(f, (inp, m1, m2))
    # beta == 0: input is ignored but still gets a (zero) gradient
    (g,) = torch.autograd.grad(torch.addmm(inp, m1, m2, beta=0).sum(), inp)
    assert f64(g).tolist() == [0.0, 0.0, 0.0]
    b1 = T(rnd(2, 2, 3, seed=4), requires_grad=True)
    b2 = T(rnd(2, 3, 2, seed=5), requires_grad=True)
    i2 = T(rnd(2, 2, seed=6), requires_grad=True)
    assert gradcheck(lambda i, x, y: torch.addbmm(i, x, y, alpha=2), (i2, b1, b2))
    assert gradcheck(lambda i, x, y: torch.baddbmm(i, x, y, beta=3), (i2, b1, b2))
    v = T(rnd(3, seed=7), requires_grad=True)
    assert gradcheck(lambda i, m, x: torch.addmv(i, m, x), (T(rnd(2), requires_grad=True), T(rnd(2, 3)), v))


# -- einsum ------------------------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,j", [(2,), (3,)]),
    ("ij->ji", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk", [(2, 1, 2, 3), (5, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3), (4, 3, 2)]),
    ("i...->...", [(2, 3, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("a...a", [(3, 2, 3)]),
    ("...,...", [(2, 3, 4), (3, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("i,i->i", [(1,), (3,)]),
    ("i,i->", [(1,), (3,)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
    ("iJ->Ji", [(2, 3)]),
    ("ij,jk->ik", [(2, 0), (0, 4)]),
    ("ij->j", [(3, 0)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("i,ij,j->", [(3,), (3, 4), (4,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum_values(eq, shapes):
    arrs = [rnd(*s, seed=i + 30) for i, s in enumerate(shapes)]
    r = torch.einsum(eq, *[T(a) for a in arrs])
    if eq.startswith("i,i") and shapes[0] == (1,):          # size-1 broadcasting (NumPy's einsum refuses it)
        arrs[0] = np.broadcast_to(arrs[0], shapes[1])
    ref = np.einsum(eq, *arrs)
    assert tuple(r.shape) == np.shape(ref)
    np.testing.assert_allclose(f64(r), ref, rtol=1e-12, atol=1e-12)


def test_einsum_broadcast_ellipsis_contracted():
    a, b = rnd(2, 1, 2, 3, seed=1), rnd(5, 3, 4, seed=2)
    r = torch.einsum("...ij,...jk->ik", T(a), T(b))
    ref = np.einsum("...ij,...jk->...ik", a, b).sum((0, 1))       # dropped '...' dimensions are summed
    np.testing.assert_allclose(f64(r), ref, rtol=1e-12)
    x, y = T(a, requires_grad=True), T(b, requires_grad=True)
    assert gradcheck(lambda p, q: torch.einsum("...ij,...jk->ik", p, q), (x, y))


def test_saved_input_modified_in_place_raises():
    a = T(rnd(2, 2), requires_grad=True)
    b = T(rnd(2, 2))
    r = a @ b
    b.add_(1)
    with pytest.raises(RuntimeError):
        r.sum().backward()


def test_einsum_forms_and_dtypes():
    a, b = rnd(2, 3), rnd(3, 4)
    ref = a @ b
    np.testing.assert_allclose(f64(torch.einsum("ij,jk", [T(a), T(b)])), ref)
    np.testing.assert_allclose(f64(torch.einsum(T(a), [0, 1], T(b), [1, 2], [0, 2])), ref)
    np.testing.assert_allclose(f64(torch.einsum(T(a), [0, Ellipsis])), a.T)
    np.testing.assert_allclose(f64(torch.einsum("i j , j k -> i k", T(a), T(b))), ref)
    ia = np.arange(6).reshape(2, 3)
    r = torch.einsum("ij,jk->ik", T(ia, torch.int64), T(ia.T, torch.int64))
    assert r.dtype is torch.int64 and (r.numpy() == ia @ ia.T).all()
    r = torch.einsum("ij,ij->ij", T(a, torch.float32), T(a))
    assert r.dtype is torch.float64
    x = T(a)
    v = torch.einsum("ij", x)
    assert v is not x and v.tolist() == x.tolist()
    assert torch.einsum("ij->", torch.ones(2, 3, dtype=torch.bool)).item() == 6


@pytest.mark.parametrize("eq,shapes,msg", [
    ("ij,jk->ik", [(2, 3), (4, 4)], "subscript j has size 4 for operand 1 which does not broadcast with "
                                    "previously seen size 3"),
    ("ij,jk->ik", [(2, 3, 3), (3, 4)], r"the number of subscripts in the equation \(2\) does not match the "
                                       r"number of dimensions \(3\) for operand 0 and no ellipsis was given"),
    ("ii->i", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("ij->ijk", [(2, 3)], "output subscript k does not appear in the equation for any input operand"),
    ("ij->ii", [(2, 2)], "output subscript i appears more than once in the output"),
    ("ij,jk->ik", [(2, 3)], "fewer operands were provided than specified in the equation"),
    ("i", [(2,), (2,)], "more operands were provided than specified in the equation"),
    ("i1", [(2, 3)], r"invalid subscript given at index 1 in the equation string, subscripts must be in "
                     r"\[a-zA-Z\]"),
    ("i..->", [(2, 3)], "found '.' for operand 0 that is not part of any ellipsis"),
])
def test_einsum_errors(eq, shapes, msg):
    with pytest.raises(RuntimeError, match=msg):
        torch.einsum(eq, *[torch.ones(*s) for s in shapes])


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk", [(2, 1, 2, 3), (2, 3, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (2, 3, 2), (2, 2)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
])
def test_einsum_gradcheck(eq, shapes):
    xs = [T(rnd(*s, seed=i + 40), requires_grad=True) for i, s in enumerate(shapes)]
    f = lambda *ops: torch.einsum(eq, *ops)  # noqa: E731
    assert gradcheck(f, xs)
    assert gradgradcheck(f, xs)


# -- tensordot, kron, cross, trace -----------------------------------------------------------------------
def test_tensordot_values_errors_grad():
    a, b = rnd(2, 3, 4, seed=1), rnd(3, 4, 5, seed=2)
    np.testing.assert_allclose(f64(torch.tensordot(T(a), T(b))), np.tensordot(a, b))
    np.testing.assert_allclose(f64(torch.tensordot(T(a), T(b), dims=([1, 2], [0, 1]))),
                               np.tensordot(a, b, axes=([1, 2], [0, 1])))
    np.testing.assert_allclose(f64(torch.tensordot(T(a), T(b), dims=0)), np.tensordot(a, b, axes=0))
    c = rnd(4, 2, seed=3)
    np.testing.assert_allclose(f64(torch.tensordot(T(a), T(c), dims=([2, 0], [0, 1]))),
                               np.tensordot(a, c, axes=([2, 0], [0, 1])))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 3 in dim 1 and "
                                           "second has size 4 in dim 0"):
        torch.tensordot(torch.ones(2, 3, 4), torch.ones(4, 4, 5), dims=([1, 2], [0, 1]))
    with pytest.raises(RuntimeError, match="tensordot expects dims < ndim_a or ndim_b, but got dims=4"):
        torch.tensordot(torch.ones(2, 3, 4), torch.ones(3, 4, 5), dims=4)
    xa = T(rnd(2, 3, seed=4), requires_grad=True)
    xb = T(rnd(3, 2, seed=5), requires_grad=True)
    assert gradgradcheck(lambda x, y: torch.tensordot(x, y, dims=1), (xa, xb))


def test_kron():
    a, b = rnd(2, 3, seed=1), rnd(4, 5, 6, seed=2)
    np.testing.assert_allclose(f64(torch.kron(T(a), T(b))), np.kron(a, b))
    np.testing.assert_allclose(f64(torch.kron(T(b[0]), T(a))), np.kron(b[0], a))
    x = T(rnd(2, 2, seed=3), requires_grad=True)
    y = T(rnd(2, 3, seed=4), requires_grad=True)
    assert gradcheck(torch.kron, (x, y))


def test_cross():
    a, b = rnd(4, 3, seed=1), rnd(4, 3, seed=2)
    np.testing.assert_allclose(f64(LA.cross(T(a), T(b))), np.cross(a, b))
    np.testing.assert_allclose(f64(LA.cross(T(a), T(b[:1]))), np.cross(a, b[:1]))
    np.testing.assert_allclose(f64(torch.cross(T(a.T), T(b.T), dim=0)), np.cross(a, b).T)
    with pytest.warns(UserWarning, match="deprecated"):
        r = torch.cross(T(a.T), T(b.T))
    np.testing.assert_allclose(f64(r), np.cross(a, b).T)
    ia, ib = np.array([1, 0, 0]), np.array([0, 1, 0])
    assert LA.cross(T(ia, torch.int64), T(ib, torch.int64)).tolist() == [0, 0, 1]
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4"):
        LA.cross(torch.ones(3, 4), torch.ones(3, 4))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs must have the same number of dimensions"):
        LA.cross(torch.ones(4, 3), torch.ones(3))
    x = T(a[:2], requires_grad=True)
    y = T(b[:2], requires_grad=True)
    assert gradcheck(LA.cross, (x, y))
    assert gradgradcheck(LA.cross, (x, y))


def test_trace():
    a = rnd(3, 4)
    assert math.isclose(torch.trace(T(a)).item(), np.trace(a))
    assert T(a).trace().item() == pytest.approx(np.trace(a))
    r = torch.trace(torch.tensor([[1, 2], [3, 4]], dtype=torch.int32))
    assert r.dtype is torch.int64 and r.item() == 5
    assert torch.trace(torch.ones(0, 0)).item() == 0
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 3"):
        torch.trace(torch.ones(3, 3, 3))
    x = T(rnd(3, 3), requires_grad=True)
    torch.trace(x).backward()
    assert f64(x.grad).tolist() == np.eye(3).tolist()
    x2 = T(rnd(2, 3), requires_grad=True)
    assert gradcheck(torch.trace, (x2,))
    assert gradgradcheck(lambda t: torch.trace(t * t), (x2,))


def test_linalg_diagonal():
    a = rnd(2, 3, 4)
    np.testing.assert_allclose(f64(LA.diagonal(T(a))), np.diagonal(a, 0, -2, -1))
    np.testing.assert_allclose(f64(LA.diagonal(T(a), offset=1, dim1=0, dim2=2)), np.diagonal(a, 1, 0, 2))
    x = T(a, requires_grad=True)
    assert gradcheck(lambda t: LA.diagonal(t, offset=-1, dim1=2, dim2=1), (x,))


# -- inverse, solve, gesv -----------------------------------------------------------------------------
def test_inverse_values_and_errors():
    A = well(3, seed=1)
    np.testing.assert_allclose(f64(torch.inverse(T(A))), np.linalg.inv(A), rtol=1e-12)
    np.testing.assert_allclose(f64(LA.inv(T(well(3, 2, seed=2)))), np.linalg.inv(well(3, 2, seed=2)), rtol=1e-12)
    np.testing.assert_allclose(f64(noncontig(A).inverse()), np.linalg.inv(A), rtol=1e-12)
    assert torch.inverse(T(A, torch.float32)).dtype is torch.float32
    assert torch.inverse(torch.ones(0, 0)).shape == (0, 0)
    with pytest.raises(RuntimeError, match="singular"):
        torch.inverse(torch.ones(3, 3))
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(torch.zeros(2, 3, 3))
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, but they are 2 by 3 "
                                           "matrices"):
        torch.inverse(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.inv: The input tensor A must have at least 2 dimensions."):
        torch.inverse(torch.ones(3))
    with pytest.raises(RuntimeError, match="linalg.inv: Expected a floating point or complex tensor as input. "
                                           "Got Long"):
        torch.inverse(torch.ones(3, 3, dtype=torch.int64))


def test_inverse_grad():
    A = T(well(3, seed=3), requires_grad=True)
    assert gradcheck(torch.inverse, (A,))
    assert gradgradcheck(torch.inverse, (A,))
    B = T(well(2, 2, seed=4), requires_grad=True)
    assert gradcheck(LA.inv, (B,))


def test_solve_values():
    A, b = well(3, seed=1), rnd(3, seed=2)
    np.testing.assert_allclose(f64(LA.solve(T(A), T(b))), np.linalg.solve(A, b), rtol=1e-12)
    Bm = rnd(3, 2, seed=3)
    np.testing.assert_allclose(f64(LA.solve(T(A), T(Bm))), np.linalg.solve(A, Bm), rtol=1e-12)
    # batched A with one vector; batched vectors (B has A's shape minus the last dim)
    Ab = well(3, 2, seed=4)
    r = LA.solve(T(Ab), T(b))
    assert r.shape == (2, 3)
    np.testing.assert_allclose(f64(r), np.linalg.solve(Ab, b[:, None])[..., 0], rtol=1e-12)
    bb = rnd(2, 3, seed=5)
    np.testing.assert_allclose(f64(LA.solve(T(Ab), T(bb))), np.linalg.solve(Ab, bb[..., None])[..., 0],
                               rtol=1e-12)
    # broadcast batch dimensions
    B4 = rnd(4, 1, 3, 2, seed=6)
    r = LA.solve(T(Ab), T(B4))
    assert r.shape == (4, 2, 3, 2)
    np.testing.assert_allclose(f64(r), np.linalg.solve(Ab, B4), rtol=1e-12)
    # X A = B
    Br = rnd(2, 3, seed=7)
    np.testing.assert_allclose(f64(LA.solve(T(A), T(Br), left=False)), Br @ np.linalg.inv(A), rtol=1e-10)
    # non-contiguous
    np.testing.assert_allclose(f64(LA.solve(noncontig(A), noncontig(Bm))), np.linalg.solve(A, Bm), rtol=1e-12)


def test_solve_errors():
    with pytest.raises(RuntimeError, match="singular"):
        LA.solve(torch.ones(3, 3), torch.ones(3))
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                                           r"\(3x3 and 4x1\)"):
        LA.solve(torch.eye(3), torch.ones(4))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 2x3\)"):
        LA.solve(torch.eye(3), torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.solve: Expected A and B to have the same dtype, but found A of "
                                           "type Float and B of type Double instead"):
        LA.solve(torch.eye(3), torch.ones(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        LA.solve(torch.eye(3, dtype=torch.int64), torch.ones(3, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        LA.solve(torch.ones(2, 3), torch.ones(3))
    with pytest.raises(RuntimeError, match="do not broadcast"):
        LA.solve(torch.eye(3).expand(2, 3, 3), torch.ones(4, 3, 2))


def test_solve_grad():
    A = T(well(3, seed=8), requires_grad=True)
    b = T(rnd(3, seed=9), requires_grad=True)
    B = T(rnd(3, 2, seed=10), requires_grad=True)
    assert gradcheck(LA.solve, (A, b))
    assert gradgradcheck(LA.solve, (A, b))
    assert gradcheck(LA.solve, (A, B))
    assert gradgradcheck(LA.solve, (A, B))
    Ab = T(well(2, 2, seed=11), requires_grad=True)
    Bb = T(rnd(3, 1, 2, 2, seed=12), requires_grad=True)
    assert gradcheck(LA.solve, (Ab, Bb))
    assert gradcheck(lambda a, x: LA.solve(a, x, left=False), (A, T(rnd(2, 3, seed=13), requires_grad=True)))


def test_gesv_legacy():
    A, B = well(3, seed=1), rnd(3, 2, seed=2)
    X, LU = torch.gesv(T(B), T(A))
    np.testing.assert_allclose(f64(X), np.linalg.solve(A, B), rtol=1e-12)
    # LU is LAPACK's packed factorization: P A = L U
    lu, piv = f64(LU), LA.lu_factor(T(A)).pivots.tolist()
    L = np.tril(lu, -1) + np.eye(3)
    U = np.triu(lu)
    PA = A.copy()
    for i, p in enumerate(piv):
        PA[[i, p - 1]] = PA[[p - 1, i]]
    np.testing.assert_allclose(L @ U, PA, rtol=1e-12)
    X2, _ = T(B).gesv(T(A))
    np.testing.assert_allclose(f64(X2), f64(X))
    # "autograd supports inverse, gesv" (seed 000)
    tA, tB = T(A, requires_grad=True), T(B, requires_grad=True)
    assert gradcheck(lambda b, a: torch.gesv(b, a)[0], (tB, tA))
    assert gradgradcheck(lambda b, a: torch.gesv(b, a)[0], (tB, tA))
    assert not torch.gesv(tB, tA)[1].requires_grad


# -- determinants ------------------------------------------------------------------------------------------
def test_det_values():
    A = rnd(3, 3, seed=1)
    assert math.isclose(torch.det(T(A)).item(), np.linalg.det(A), rel_tol=1e-12)
    Ab = rnd(2, 4, 4, seed=2)
    r = LA.det(T(Ab))
    assert r.shape == (2,)
    np.testing.assert_allclose(f64(r), np.linalg.det(Ab), rtol=1e-12)
    assert torch.det(torch.ones(3, 3)).item() == 0
    assert torch.det(torch.ones(0, 0)).item() == 1
    assert T(A, torch.float32).det().dtype is torch.float32
    s, la = torch.slogdet(T(-np.eye(3)))
    assert s.item() == -1 and la.item() == 0
    s, la = LA.slogdet(T(Ab))
    ref_s, ref_la = np.linalg.slogdet(Ab)
    np.testing.assert_allclose(f64(s), ref_s)
    np.testing.assert_allclose(f64(la), ref_la, rtol=1e-12)
    assert math.isnan(torch.logdet(T(-np.eye(3))).item())
    assert torch.logdet(T(np.diag([-1.0, -1.0, 2.0]))).item() == pytest.approx(math.log(2))
    assert torch.logdet(torch.ones(2, 2)).item() == -math.inf
    with pytest.raises(RuntimeError, match="linalg.det: A must be batches of square matrices, but they are 2 by 3"):
        torch.det(torch.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        torch.det(torch.ones(3, 3, dtype=torch.int64))


def test_det_grad():
    A = T(rnd(3, 3, seed=3) + np.eye(3), requires_grad=True)
    assert gradcheck(torch.det, (A,))
    assert gradgradcheck(torch.det, (A,))
    Ab = T(rnd(2, 2, 2, seed=4) + np.eye(2), requires_grad=True)
    assert gradcheck(LA.det, (Ab,))
    assert gradgradcheck(LA.det, (Ab,))
    # singular matrix: the gradient is the cofactor matrix
    S = T([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], requires_grad=True)
    torch.det(S).backward()
    a = f64(S)
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(3)]
                    for i in range(3)])
    np.testing.assert_allclose(f64(S.grad), cof, atol=1e-12)
    assert gradcheck(torch.det, (T(f64(S), requires_grad=True),))
    # logdet / slogdet
    P = T(well(3, seed=5), requires_grad=True)
    assert gradcheck(torch.logdet, (P,))
    assert gradgradcheck(torch.logdet, (P,))
    assert gradcheck(lambda x: LA.slogdet(x)[1], (T(-well(3, seed=6), requires_grad=True),))


# -- norms ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, math.inf, -math.inf, 0, -1])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm_values(ord, dim, keepdim):
    a = rnd(2, 3, 4, seed=1)
    r = LA.vector_norm(T(a), ord, dim, keepdim)
    ax = None if dim is None else dim
    if ord == 0:
        ref = np.sum(a != 0, axis=ax, keepdims=keepdim).astype(float)
    elif ord == math.inf:
        ref = np.max(np.abs(a), axis=ax, keepdims=keepdim)
    elif ord == -math.inf:
        ref = np.min(np.abs(a), axis=ax, keepdims=keepdim)
    else:
        ref = np.sum(np.abs(a) ** ord, axis=ax, keepdims=keepdim) ** (1.0 / ord)
    assert tuple(r.shape) == np.shape(ref)
    np.testing.assert_allclose(f64(r), ref, rtol=1e-12)


@pytest.mark.parametrize("ord", [2, 1, 3, 1.5, math.inf, -math.inf])
def test_vector_norm_grad(ord):
    x = T(rnd(2, 3, seed=2), requires_grad=True)
    assert gradcheck(lambda t: LA.vector_norm(t, ord), (x,))
    assert gradgradcheck(lambda t: LA.vector_norm(t, ord, dim=1), (x,))


def test_norm_grad_edge_cases():
    z = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    LA.vector_norm(z).backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]
    t = T([3.0, -3.0, 1.0], requires_grad=True)          # ties share the inf-norm gradient
    LA.vector_norm(t, math.inf).backward()
    assert t.grad.tolist() == [0.5, -0.5, 0.0]
    t0 = T([1.0, 0.0], requires_grad=True)
    LA.vector_norm(t0, 0).backward()
    assert t0.grad.tolist() == [0.0, 0.0]


def test_vector_norm_errors_and_dtype():
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        LA.vector_norm(torch.ones(3, dtype=torch.int64))
    with pytest.raises(TypeError, match="must be Number"):
        LA.vector_norm(torch.ones(3), "fro")
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        LA.vector_norm(torch.ones(0), math.inf)
    assert LA.vector_norm(torch.ones(0)).item() == 0
    r = LA.vector_norm(torch.ones(3, 4), dtype=torch.float64)
    assert r.dtype is torch.float64 and r.item() == pytest.approx(math.sqrt(12))


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm_values(ord):
    a = rnd(2, 3, 4, seed=3)
    r = LA.matrix_norm(T(a), ord)
    ref = np.linalg.norm(a, ord, axis=(-2, -1))
    np.testing.assert_allclose(f64(r), ref, rtol=1e-10)
    r = LA.matrix_norm(T(a), ord, dim=(0, 2), keepdim=True)
    ref = np.linalg.norm(a, ord, axis=(0, 2), keepdims=True)
    assert tuple(r.shape) == ref.shape
    np.testing.assert_allclose(f64(r), ref, rtol=1e-10)


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm_grad(ord):
    x = T(rnd(3, 4, seed=4), requires_grad=True)
    assert gradcheck(lambda t: LA.matrix_norm(t, ord), (x,))
    assert gradgradcheck(lambda t: LA.matrix_norm(t, ord), (x,))


def test_matrix_norm_errors():
    with pytest.raises(RuntimeError, match="The input tensor A must have at least 2 dimensions"):
        LA.matrix_norm(torch.ones(3))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        LA.matrix_norm(torch.ones(3, 4), ord=3)
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm: dims must be different. Got \(0, 0\)"):
        LA.matrix_norm(torch.ones(3, 4), dim=(0, 0))
    x = T(rnd(3, 3), requires_grad=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        LA.matrix_norm(x, "nuc").backward()


def test_linalg_norm_and_legacy_norm():
    a = rnd(3, 4, seed=5)
    v = rnd(5, seed=6)
    np.testing.assert_allclose(LA.norm(T(a)).item(), np.linalg.norm(a))
    np.testing.assert_allclose(LA.norm(T(a), 2).item(), np.linalg.norm(a, 2))
    np.testing.assert_allclose(LA.norm(T(a), 1).item(), np.linalg.norm(a, 1))
    np.testing.assert_allclose(LA.norm(T(v), 3).item(), np.linalg.norm(v, 3))
    np.testing.assert_allclose(f64(LA.norm(T(a), 1, dim=1)), np.linalg.norm(a, 1, axis=1))
    np.testing.assert_allclose(f64(LA.norm(T(a), math.inf, dim=(0, 1))), np.linalg.norm(a, np.inf))
    b = rnd(3, 4, 5, seed=7)
    np.testing.assert_allclose(LA.norm(T(b)).item(), np.sqrt((b ** 2).sum()))
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be 1D or 2D. Got 3D"):
        LA.norm(T(b), 2)
    with pytest.raises(RuntimeError, match=r"If dim is specified, it must be of length 1 or 2. Got \[0, 1, 2\]"):
        LA.norm(T(b), dim=(0, 1, 2))
    x = T(a, requires_grad=True)
    assert gradgradcheck(lambda t: LA.norm(t), (x,))
    assert gradgradcheck(lambda t: LA.norm(t, 1), (x,))


# -- matrix_power, multi_dot, vecdot -------------------------------------------------------------------------
def test_matrix_power():
    A = well(3, seed=1) / 3
    for n in (0, 1, 2, 3, 5, -1, -2):
        np.testing.assert_allclose(f64(LA.matrix_power(T(A), n)), np.linalg.matrix_power(A, n), rtol=1e-10)
    Ab = well(2, 3, seed=2)
    np.testing.assert_allclose(f64(T(Ab).matrix_power(3)), np.linalg.matrix_power(Ab, 3), rtol=1e-12)
    ia = np.array([[1, 1], [1, 0]])
    r = torch.matrix_power(T(ia, torch.int64), 10)
    assert r.dtype is torch.int64 and r.tolist() == [[89, 55], [55, 34]]
    with pytest.raises(RuntimeError, match="linalg.matrix_power: A must be batches of square matrices"):
        LA.matrix_power(torch.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match="singular"):
        LA.matrix_power(torch.ones(3, 3), -1)
    x = T(well(2, seed=3), requires_grad=True)
    assert gradcheck(lambda t: LA.matrix_power(t, 3), (x,))
    assert gradcheck(lambda t: LA.matrix_power(t, -2), (x,))
    (g,) = torch.autograd.grad(LA.matrix_power(x, 0).sum(), x)
    assert f64(g).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_multi_dot_vecdot_chain_matmul():
    a, b, c = rnd(3, seed=1), rnd(3, 4, seed=2), rnd(4, seed=3)
    np.testing.assert_allclose(LA.multi_dot([T(a), T(b), T(c)]).item(), np.linalg.multi_dot([a, b, c]))
    m = [rnd(2, 3, seed=4), rnd(3, 4, seed=5), rnd(4, 2, seed=6)]
    np.testing.assert_allclose(f64(LA.multi_dot([T(x) for x in m])), np.linalg.multi_dot(m))
    np.testing.assert_allclose(f64(torch.chain_matmul(*[T(x) for x in m])), np.linalg.multi_dot(m))
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): expected at least 2 tensors but got 1"):
        LA.multi_dot([torch.ones(3)])
    x, y = rnd(2, 3, seed=7), rnd(3, seed=8)
    np.testing.assert_allclose(f64(LA.vecdot(T(x), T(y))), x @ y)


# -- namespace and methods -----------------------------------------------------------------------------------
def test_namespace_and_methods():
    for name in ("solve", "inv", "det", "slogdet", "norm", "vector_norm", "matrix_norm", "matrix_power", "cross",
                 "matmul", "multi_dot", "vecdot", "diagonal", "lu_factor"):
        assert callable(getattr(torch.linalg, name))
    assert issubclass(torch.linalg.LinAlgError, RuntimeError)
    for name in ("matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv", "addr",
                 "addbmm", "baddbmm", "einsum", "tensordot", "kron", "cross", "trace", "inverse", "det", "logdet",
                 "slogdet", "matrix_power", "chain_matmul", "gesv"):
        assert callable(getattr(torch, name))
    t = torch.ones(2, 2)
    for name in ("matmul", "mm", "bmm", "mv", "dot", "outer", "addmm", "addmm_", "trace", "inverse", "det",
                 "matrix_power", "__matmul__", "__rmatmul__"):
        assert callable(getattr(t, name))
    assert torch.matmul(torch.ones(2, 3), torch.ones(3, 2)).grad_fn is None
    with torch.no_grad():
        x = torch.ones(2, 2, requires_grad=True)
        assert (x @ x).grad_fn is None
