"""Complex dtypes: promotion, creation, printing, casts, the complex ops and their values against
complex128 NumPy references, views of the parts, errors for ops complex numbers lack."""
import math
import warnings

import numpy as np
import pytest

import tensorplug as torch

Z = np.array([1 + 2j, -3.5 - 1j, 0.25 + 0j, -0.5 + 4j])


def zt(values=Z, dtype=torch.complex64):
    return torch.tensor(values, dtype=dtype)


def close(t, ref, tol=1e-6):
    got = t.numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    assert got.shape == np.shape(ref)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


# -- dtypes and promotion ---------------------------------------------------------------------------
def test_dtype_objects_and_aliases():
    """complex64 / complex128 are complex, not floating point; cfloat and cdouble are their aliases."""
    assert torch.cfloat is torch.complex64 and torch.cdouble is torch.complex128
    assert torch.complex64.is_complex and not torch.complex64.is_floating_point
    assert torch.complex64.itemsize == 8 and torch.complex128.itemsize == 16
    assert torch.float32.to_complex() is torch.complex64 and torch.complex128.to_real() is torch.float64
    assert torch.tensor([1j]).is_complex() and torch.is_complex(torch.tensor([1j]))
    assert not torch.tensor([1.0]).is_complex() and not torch.tensor([1j]).is_floating_point()
    assert torch.tensor([1j]).type() == "tensorplug.ComplexFloatTensor"


@pytest.mark.parametrize("a, b, want", [
    (torch.float32, torch.complex64, torch.complex64), (torch.float64, torch.complex64, torch.complex128),
    (torch.float16, torch.complex64, torch.complex64), (torch.int64, torch.complex64, torch.complex64),
    (torch.bool, torch.complex128, torch.complex128), (torch.complex64, torch.complex128, torch.complex128),
    (torch.uint8, torch.complex64, torch.complex64), (torch.float16, torch.complex128, torch.complex128)])
def test_promote_types(a, b, want):
    """PyTorch's table: a complex dtype with float parts wide enough for both."""
    assert torch.promote_types(a, b) is want and torch.promote_types(b, a) is want


def test_result_type_with_python_complex_scalars():
    """A Python complex scalar takes the default complex dtype, but a float tensor keeps its precision."""
    assert (torch.tensor([1.0, 2.0]) * 1j).dtype is torch.complex64
    assert (torch.tensor([1.0], dtype=torch.float64) * 1j).dtype is torch.complex128
    assert (torch.tensor([1, 2]) * 1j).dtype is torch.complex64
    assert (torch.tensor([True]) + 1j).dtype is torch.complex64
    # a 0-d complex64 tensor with a dimensioned float64 one: complex128 (category wins, precision kept)
    assert torch.result_type(torch.tensor([1.0], dtype=torch.float64), torch.tensor(1j)) is torch.complex128
    close(torch.tensor([1.0, 2.0]) * (2 - 1j), np.array([2 - 1j, 4 - 2j]))
    close(1j - torch.tensor([1, 2]), np.array([-1 + 1j, -2 + 1j]))


def test_default_complex_follows_default_float():
    """With float64 as the default dtype, Python complex numbers make complex128 tensors."""
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.tensor([1 + 1j]).dtype is torch.complex128
        assert (torch.tensor([1.0], dtype=torch.float32) * 1j).dtype is torch.complex64
        assert repr(torch.tensor([1 + 1j])) == "tensor([1.+1.j])"
        assert repr(torch.tensor([1 + 1j], dtype=torch.complex64)) == "tensor([1.+1.j], dtype=tensorplug.complex64)"
    finally:
        torch.set_default_dtype(torch.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        torch.set_default_dtype(torch.complex64)


# -- creation ---------------------------------------------------------------------------------------
def test_creation():
    """tensor / zeros / ones / full / from_numpy with complex values."""
    assert torch.tensor([1 + 2j]).dtype is torch.complex64
    close(torch.tensor([[1 + 2j, 3]]), np.array([[1 + 2j, 3]]))
    z = torch.zeros(2, 3, dtype=torch.cfloat)
    assert z.dtype is torch.complex64 and (z.numpy() == 0).all()
    assert torch.ones(2, dtype=torch.cdouble).numpy().tolist() == [1 + 0j, 1 + 0j]
    f = torch.full((2,), 1 + 1j)
    assert f.dtype is torch.complex64 and f.tolist() == [1 + 1j, 1 + 1j]
    a = np.array([1 + 1j, 2], dtype=np.complex128)
    t = torch.from_numpy(a)
    assert t.dtype is torch.complex128
    a[0] = 5j
    assert t[0].item() == 5j                      # shares memory
    assert torch.zeros(2).to(torch.complex64).dtype is torch.complex64


def test_randn_and_rand_complex():
    """randn: real and imaginary parts independent, each of variance 1/2; rand: each part in [0, 1)."""
    torch.manual_seed(0)
    r = torch.randn(200000, dtype=torch.cfloat)
    assert r.dtype is torch.complex64
    re, im = r.real.numpy().astype(np.float64), r.imag.numpy().astype(np.float64)
    assert abs(re.var() - 0.5) < 0.01 and abs(im.var() - 0.5) < 0.01
    assert abs(re.mean()) < 0.01 and abs(np.corrcoef(re, im)[0, 1]) < 0.01
    u = torch.rand(1000, dtype=torch.cdouble).numpy()
    assert u.dtype == np.complex128 and (u.real >= 0).all() and (u.real < 1).all() and (u.imag < 1).all()
    assert abs(u.imag.mean() - 0.5) < 0.05


def test_item_tolist_and_conversions():
    """item() is a Python complex; float() / int() of a complex value raise as PyTorch."""
    z = zt()
    assert z[0].item() == 1 + 2j and isinstance(z[0].item(), complex)
    assert z.tolist() == [complex(v) for v in Z.astype(np.complex64)]
    assert complex(torch.tensor(1 + 2j)) == 1 + 2j
    with pytest.raises(RuntimeError, match="value cannot be converted to type double without overflow"):
        float(torch.tensor(1 + 2j))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without overflow"):
        int(torch.tensor(1 + 2j))
    assert bool(torch.tensor(1j)) and not bool(torch.tensor(0j))


def test_cast_to_real_warns_and_keeps_the_real_part():
    """.to(float) warns "Casting complex values to real discards the imaginary part", as PyTorch."""
    z = zt()
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        r = z.to(torch.float32)
    close(r, Z.real)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert z.long().tolist() == [1, -3, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z.to(torch.complex128)                    # complex to complex: silent
        torch.tensor([1.0, 2.0]).to(torch.complex64)


def test_printing_like_pytorch():
    """The real and imaginary parts are laid out by a formatter each."""
    assert repr(torch.tensor([1 + 2j, -3.5 - 1j])) == "tensor([ 1.0000+2.j, -3.5000-1.j])"
    assert repr(torch.tensor(1 + 2j)) == "tensor(1.+2.j)"
    assert repr(torch.tensor([1.5 + 0.25j, 2 + 3j])) == "tensor([1.5000+0.2500j, 2.0000+3.0000j])"
    assert repr(torch.tensor([1 + 1e-6j])) == "tensor([1.+1.0000e-06j])"
    assert repr(torch.tensor([complex(math.nan, 1), complex(math.nan, math.inf)])) == "tensor([nan+1.j, nan+infj])"
    assert repr(torch.zeros(2, dtype=torch.cdouble)) == "tensor([0.+0.j, 0.+0.j], dtype=tensorplug.complex128)"
    assert repr(torch.empty(0, dtype=torch.cfloat)) == "tensor([], dtype=tensorplug.complex64)"
    assert repr(torch.ones(2, dtype=torch.cfloat, requires_grad=True)) == "tensor([1.+0.j, 1.+0.j], requires_grad=True)"
    assert repr(torch.tensor([[1 + 2j, 3 - 4.5j], [1e-3j, 100]])) == (
        "tensor([[  1.+2.0000e+00j,   3.-4.5000e+00j],\n        [  0.+1.0000e-03j, 100.+0.0000e+00j]])")


# -- ops against complex128 references ---------------------------------------------------------------
@pytest.mark.parametrize("name, ref", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh),
    ("tan", np.tan), ("sigmoid", lambda z: 1 / (1 + np.exp(-z))), ("neg", np.negative),
    ("reciprocal", lambda z: 1 / z), ("rsqrt", lambda z: 1 / np.sqrt(z)), ("square", lambda z: z * z),
    ("sinh", np.sinh), ("cosh", np.cosh), ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan),
    ("log1p", np.log1p), ("expm1", np.expm1), ("conj", np.conj), ("conj_physical", np.conj)])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_unary_values(name, ref, dtype):
    r = getattr(torch, name)(zt(dtype=dtype))
    assert r.dtype is dtype
    close(r, ref(Z), 1e-5 if dtype is torch.complex64 else 1e-12)


def test_magnitude_phase_and_parts():
    z = zt(dtype=torch.complex128)
    for name, ref in (("abs", np.abs), ("angle", np.angle), ("real", np.real), ("imag", np.imag)):
        r = getattr(torch, name)(z)
        assert r.dtype is torch.float64, name
        close(r, ref(Z), 1e-12)
    close(torch.sgn(torch.tensor([0j, 3 + 4j])), np.array([0, 0.6 + 0.8j]))
    close(torch.tensor([1.0, -2.0, 0.0]).angle(), np.array([0, math.pi, 0]))
    close(torch.tensor([1, -2]).angle(), np.array([0, math.pi], dtype=np.float32))
    assert torch.abs(zt()).dtype is torch.float32
    assert torch.isreal(torch.tensor([1 + 0j, 1j])).tolist() == [True, False]


@pytest.mark.parametrize("op, ref", [
    (lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract), (lambda a, b: a * b, np.multiply),
    (lambda a, b: a / b, np.divide), (lambda a, b: a ** b, np.power), (lambda a, b: torch.pow(a, 2), lambda a, b: a ** 2)])
def test_binary_values(op, ref):
    w = np.array([0.5 - 1j, 2 + 0.5j, -1 + 1j, 3j])
    close(op(zt(dtype=torch.complex128), zt(w, torch.complex128)), ref(Z, w), 1e-12)
    close(op(zt(), torch.tensor(w.real + 2)), ref(Z.astype(np.complex64), (w.real + 2).astype(np.float32)), 1e-5)


def test_reductions_and_matmul():
    z = zt(dtype=torch.complex128)
    m = Z.reshape(2, 2)
    close(z.sum(), Z.sum(), 1e-12)
    close(z.mean(), Z.mean(), 1e-12)
    close(z.prod(), Z.prod(), 1e-12)
    close(z.reshape(2, 2).sum(1), m.sum(1), 1e-12)
    close(z.cumsum(0), np.cumsum(Z), 1e-12)
    close(z.var(), np.var(Z, ddof=1), 1e-12)
    close(z.std(), np.std(Z, ddof=1), 1e-12)
    zm = z.reshape(2, 2)
    close(zm @ zm, m @ m, 1e-12)
    close(torch.mm(zm, zm), m @ m, 1e-12)
    close(torch.bmm(zm[None], zm[None]), (m @ m)[None], 1e-12)
    close(torch.dot(z, z), np.dot(Z, Z), 1e-12)
    close(torch.vdot(z, z), np.vdot(Z, Z), 1e-12)
    close(zm.mH, m.conj().T, 0)
    assert z.sum().dtype is torch.complex128


def test_complex_polar_and_views():
    re, im = torch.tensor([1.0, -2.0]), torch.tensor([0.5, 3.0])
    c = torch.complex(re, im)
    assert c.dtype is torch.complex64
    close(c, np.array([1 + 0.5j, -2 + 3j]))
    close(torch.complex(re[:, None], im[None, :]), (np.array([1.0, -2.0])[:, None] + 1j * np.array([0.5, 3.0])))
    close(torch.polar(torch.tensor([2.0], dtype=torch.float64), torch.tensor([0.5], dtype=torch.float64)),
          np.array([2 * np.exp(0.5j)]), 1e-12)
    close(torch.view_as_real(c), np.array([[1, 0.5], [-2, 3]]))
    close(torch.view_as_complex(torch.tensor([[1.0, 2.0], [3.0, 4.0]])), np.array([1 + 2j, 3 + 4j]))


def test_parts_are_views_you_can_write_through():
    """real / imag / view_as_real / view_as_complex alias their base, as in PyTorch."""
    z = torch.tensor([1 + 2j, 3 - 4j])
    z.real[0] = 7.0
    z.imag.mul_(3)
    assert z.tolist() == [7 + 6j, 3 - 12j]
    z.real = torch.tensor([9.0, 8.0])
    assert z.tolist() == [9 + 6j, 8 - 12j]
    v = torch.view_as_real(z)
    assert v.shape == (2, 2) and v._base is z
    v[1, 1] = 100.0
    assert z.tolist() == [9 + 6j, 8 + 100j]
    r = torch.zeros(3, 2)
    c = torch.view_as_complex(r)
    c[0] = 5 + 1j
    assert r[0].tolist() == [5.0, 1.0]
    assert torch.view_as_real(torch.tensor(1 + 2j)).shape == (2,)
    assert torch.view_as_complex(torch.tensor([1.0, 2.0])).shape == ()
    zz = torch.tensor([[1 + 2j, 3 + 4j]]).t()            # a non-contiguous complex tensor
    assert torch.view_as_real(zz).tolist() == [[[1.0, 2.0]], [[3.0, 4.0]]]


def test_in_place_writes_through_parts_are_not_tracked_by_autograd():
    """(A documented difference from PyTorch) writing through z.real / view_as_real(z) while z's history
    requires grad raises a clear error instead of rebasing the history; without grad it just writes."""
    x = torch.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    z = x * 1
    with pytest.raises(RuntimeError, match="in-place operations that carry gradients through a view"):
        z.real.mul_(2)
    with torch.no_grad():
        z.real.mul_(2)
    assert z.tolist() == [2 + 1j, 4 - 1j]


def test_conj_is_eager_and_free_for_real_tensors():
    """conj() materializes (no lazy conjugate bit here): is_conj() is False; real tensors pass through."""
    z = zt()
    c = z.conj()
    assert c.tolist() == np.conj(Z.astype(np.complex64)).tolist() and not c.is_conj()
    assert c.resolve_conj() is c and z.resolve_conj() is z
    x = torch.tensor([1.0, 2.0])
    assert x.conj() is x and x.conj_physical() is x and x.real is x and x.resolve_conj() is x


def test_comparison_and_closeness():
    a = zt()
    assert (a == zt()).all() and not (a != zt()).any()
    assert a.eq(1 + 2j).tolist() == [True, False, False, False]
    assert torch.allclose(a, a + 1e-9j) and not torch.allclose(a, a + 1e-3j)
    assert torch.isclose(a, a * (1 + 1e-7)).all()
    assert torch.equal(a, zt()) and not torch.equal(a, a.conj())
    assert torch.isnan(torch.tensor([complex(1, math.nan), 1j])).tolist() == [True, False]
    assert torch.isinf(torch.tensor([complex(math.inf, 0), 1j])).tolist() == [True, False]
    assert torch.isfinite(torch.tensor([complex(math.inf, 0), 1j])).tolist() == [False, True]
    cond = torch.tensor([True, False, True, False])
    assert torch.where(cond, a, 0).tolist() == [1 + 2j, 0j, 0.25 + 0j, 0j]


def test_in_place_and_indexing():
    z = zt()
    z[1] = 2 - 2j
    z += 1j
    z *= 2
    close(z, np.array([2 + 6j, 4 - 2j, 0.5 + 2j, -1 + 10j]))
    x = torch.zeros(2)
    with pytest.raises(RuntimeError, match="complex64 can't be cast to the desired output type float32"):
        x += torch.tensor([1j, 2j])


# -- errors -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("expr, exc, msg", [
    ("z < z", NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    ("zd >= zd", NotImplementedError, "\"ge_cpu\" not implemented for 'ComplexDouble'"),
    ("z > 1", NotImplementedError, "\"gt_cpu\" not implemented for 'ComplexFloat'"),
    ("z.max()", NotImplementedError, "\"max_all\" not implemented for 'ComplexFloat'"),
    ("z.min()", NotImplementedError, "\"min_all\" not implemented for 'ComplexFloat'"),
    ("z.max(0)", RuntimeError, "max\\(\\): does not support complex input"),
    ("z.amax()", NotImplementedError, "\"max_values_cpu\" not implemented for 'ComplexFloat'"),
    ("z.argmax()", RuntimeError, "argmax\\(\\): does not support complex input"),
    ("torch.maximum(z, z)", RuntimeError, "maximum not implemented for complex tensors."),
    ("z.clamp(0, 1)", NotImplementedError, "clamp is not supported for complex types"),
    ("z.relu()", NotImplementedError, "clamp is not supported for complex types"),
    ("z.floor()", NotImplementedError, "floor is not supported for complex inputs"),
    ("z.ceil()", NotImplementedError, "ceil is not supported for complex inputs"),
    ("z.trunc()", NotImplementedError, "trunc is not supported for complex inputs"),
    ("z.round()", NotImplementedError, "\"round_vml_cpu\" not implemented for 'ComplexFloat'"),
    ("z.frac()", NotImplementedError, "\"frac_cpu\" not implemented for 'ComplexFloat'"),
    ("z.sign()", NotImplementedError, "torch.sign is not intended to support complex numbers"),
    ("z.erf()", NotImplementedError, "\"erf_vml_cpu\" not implemented for 'ComplexFloat'"),
    ("torch.atan2(z, z)", NotImplementedError, "\"atan2_cpu\" not implemented for 'ComplexFloat'"),
    ("z % 2", NotImplementedError, "\"remainder_cpu\" not implemented for 'ComplexFloat'"),
    ("z // 2", NotImplementedError, "\"div_floor_cpu\" not implemented for 'ComplexFloat'"),
    ("torch.fmod(z, 2)", NotImplementedError, "\"fmod_cpu\" not implemented for 'ComplexFloat'"),
    ("z & z", NotImplementedError, "\"bitwise_and_cpu\" not implemented for 'ComplexFloat'"),
    ("z.sort()", RuntimeError, "Sort does not support complex dtypes on CPU"),
    ("z.topk(1)", RuntimeError, "topk does not support complex dtypes on CPU"),
    ("z.softmax(0)", NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for 'ComplexFloat'"),
    ("z.nansum()", RuntimeError, "nansum on CPU does not support complex inputs"),
    ("torch.tensor([1.0]).imag", RuntimeError, "imag is not implemented for tensors with non-complex dtypes."),
    ("torch.view_as_real(torch.tensor([1.0]))", RuntimeError, "view_as_real is only supported for complex tensors"),
    ("torch.view_as_complex(torch.zeros(3, 3))", RuntimeError, "Tensor must have a last dimension of size 2"),
    ("torch.view_as_complex(torch.zeros(2, 3)[:, :2])", RuntimeError,
     "Tensor must have a stride divisible by 2 for all but last dimension"),
    ("torch.view_as_complex(torch.zeros(2, 2).t())", RuntimeError, "Tensor must have a last dimension with stride 1"),
    ("torch.complex(torch.tensor([1]), torch.tensor([2]))", RuntimeError,
     "Expected both inputs to be Half, Float or Double tensors but got Long and Long"),
    ("torch.complex(torch.tensor([1.0]), torch.tensor([2.0], dtype=torch.float64))", RuntimeError,
     "Expected object of scalar type Float but got scalar type Double for second argument"),
    ("torch.tensor([1.0]).fill_(1j)", RuntimeError, "value cannot be converted to type float without overflow"),
    ("torch.tensor([1.0]).clamp(1j)", RuntimeError, "value cannot be converted to type double without overflow"),
    ("z @ torch.ones(4)", RuntimeError, "dot : expected both vectors to have same dtype, but found ComplexFloat and Float"),
])
def test_ops_complex_numbers_lack_raise_pytorch_errors(expr, exc, msg):
    z, zd = zt(), zt(dtype=torch.complex128)    # noqa: F841 (used by expr)
    with pytest.raises(exc, match=msg):
        eval(expr)


# -- autograd -------------------------------------------------------------------------------------------
def test_gradient_convention():
    """For a real loss L, z.grad = dL/dRe(z) + i dL/dIm(z) (PyTorch's convention)."""
    z = torch.tensor([1 + 2j, -3.5 - 1j], requires_grad=True)
    (z * z.conj()).real.sum().backward()            # |z|^2: gradient 2z
    close(z.grad, 2 * np.array([1 + 2j, -3.5 - 1j]))
    z.grad = None
    z.abs().sum().backward()                        # |z|: z / |z|
    close(z.grad, np.array([1 + 2j, -3.5 - 1j]) / np.abs([1 + 2j, -3.5 - 1j]))
    z = torch.tensor([1 + 1j], requires_grad=True)
    z.imag.sum().backward()
    assert z.grad.tolist() == [1j]
    x = torch.tensor([2.0], requires_grad=True)     # a real leaf of a complex computation: a real gradient
    (x * (1 + 1j)).abs().sum().backward()
    assert x.grad.dtype is torch.float32
    close(x.grad, np.array([math.sqrt(2)]))


def test_backward_on_complex_outputs_needs_an_explicit_gradient():
    z = torch.tensor([1 + 2j], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs but got "
                                           "tensorplug.complex64"):
        (z * 2).sum().backward()
    with pytest.raises(RuntimeError, match="For complex Tensors, both grad_output and output are required to have "
                                           "the same dtype"):
        (z * 2).sum().backward(torch.tensor(1.0))
    (z * 2).sum().backward(torch.tensor(1 + 0j))
    assert z.grad.tolist() == [2 + 0j]


def test_requires_grad_on_complex_tensors():
    assert torch.zeros(2, dtype=torch.cfloat, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        torch.tensor([1, 2]).requires_grad_()


def test_gradcheck_compares_real_and_imaginary_parts():
    """gradcheck of complex inputs and outputs is sensitive: a vjp that forgets the conjugate fails."""
    from tensorplug.autograd import Function, GradcheckError, gradcheck, gradgradcheck

    class WrongMul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a                     # should be g * conj(b), g * conj(a)

    class RightMul(WrongMul):
        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b.conj(), g * a.conj()

    rng = np.random.default_rng(0)

    def c(*s):
        return torch.tensor(rng.standard_normal(s) + 1j * rng.standard_normal(s), dtype=torch.complex128,
                            requires_grad=True)
    a, b = c(3), c(3)
    assert gradcheck(lambda x, y: x * y, (a, b)) and gradgradcheck(lambda x, y: x * y, (a, b))
    assert gradcheck(RightMul.apply, (a, b))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongMul.apply, (a, b))
    # holomorphic and non-holomorphic functions, complex and real outputs, mixed real / complex inputs
    x = torch.tensor(rng.standard_normal(3), dtype=torch.float64, requires_grad=True)
    for f, args in ((lambda z: z.exp() / (z * z + 2), (a,)), (lambda z: z.abs() * z.angle(), (a,)),
                    (lambda z, r: (z * r).conj().sqrt(), (a, x)), (lambda z: torch.view_as_real(z.sgn()), (a,))):
        assert gradcheck(f, args) and gradgradcheck(f, args)
