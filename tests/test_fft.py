"""tensorplug.fft against explicit DFT sums in complex128 (and numpy.fft for the n-dimensional
layouts), gradients of every transform against finite differences, the decomposition (DFT by
matmul) against the NumPy kernels, and PyTorch's errors."""
import math

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.fft as F
from tensorplug.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 6))
Z = X + 1j * RNG.standard_normal((3, 6))
NORMS = [None, "backward", "ortho", "forward"]


def _scale(norm, forward, n):
    norm = norm or "backward"
    if norm == "ortho":
        return 1 / math.sqrt(n)
    return 1 / n if (norm == "forward") == forward else 1.0


def dft(x, forward=True, norm=None, n=None):
    """The DFT along the last axis by its definition (cut or zero-padded to n points)."""
    x = np.asarray(x, dtype=np.complex128)
    if n is not None:
        x = x[..., :n] if n <= x.shape[-1] else np.concatenate(
            [x, np.zeros(x.shape[:-1] + (n - x.shape[-1],))], axis=-1)
    m = x.shape[-1]
    k = np.arange(m)
    w = np.exp((-2j if forward else 2j) * np.pi * np.outer(k, k) / m)
    return x @ w * _scale(norm, forward, m)


def hermitian(half, n):
    """The full length-n Hermitian sequence whose first n // 2 + 1 entries are half's."""
    half = np.asarray(half, dtype=np.complex128)[..., : n // 2 + 1].copy()
    half = np.concatenate([half, np.zeros(half.shape[:-1] + (n // 2 + 1 - half.shape[-1],))], axis=-1)
    half[..., 0] = half[..., 0].real
    if n % 2 == 0:
        half[..., -1] = half[..., -1].real
    return np.concatenate([half, np.conj(half[..., 1:(n + 1) // 2][..., ::-1])], axis=-1)


def close(t, ref, tol=1e-10):
    got = t.numpy()
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def T(a, dtype=None):
    return torch.tensor(a, dtype=dtype or (torch.complex128 if np.iscomplexobj(a) else torch.float64))


# -- values -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 4, 9])
def test_one_dimensional_transforms(norm, n):
    close(F.fft(T(Z), n=n, norm=norm), dft(Z, True, norm, n))
    close(F.ifft(T(Z), n=n, norm=norm), dft(Z, False, norm, n))
    m = 6 if n is None else n
    close(F.rfft(T(X), n=n, norm=norm), dft(X, True, norm, n)[..., : m // 2 + 1])
    close(F.ihfft(T(X), n=n, norm=norm), dft(X, False, norm, n)[..., : m // 2 + 1])
    n_out = 2 * (6 - 1) if n is None else n
    close(F.irfft(T(Z), n=n, norm=norm), dft(hermitian(Z, n_out), False, norm).real)
    close(F.hfft(T(Z), n=n, norm=norm), dft(hermitian(Z, n_out), True, norm).real)


def test_fft_of_real_and_integer_inputs_is_complex():
    assert F.fft(torch.tensor([1.0, 0.0, 0.0, 0.0])).tolist() == [1, 1, 1, 1]
    assert F.fft(torch.arange(4)).dtype is torch.complex64
    assert F.fft(torch.tensor([1.0], dtype=torch.float64)).dtype is torch.complex128
    assert F.rfft(torch.arange(4)).dtype is torch.complex64
    assert F.irfft(torch.tensor([1.0, 0.0, 0.0])).dtype is torch.float32
    assert F.fft(torch.tensor([True, False])).tolist() == [1 + 0j, 1 + 0j]
    z32 = F.fft(torch.tensor(Z, dtype=torch.complex64))
    assert z32.dtype is torch.complex64
    close(z32, dft(Z), 1e-4)


@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional_transforms(norm):
    nn = norm or "backward"
    z3 = Z.reshape(3, 2, 3)
    x3 = X.reshape(3, 2, 3)
    close(F.fft2(T(Z), norm=norm), np.fft.fft2(Z, norm=nn))
    close(F.ifft2(T(Z), s=(4, 5), norm=norm), np.fft.ifft2(Z, s=(4, 5), norm=nn))
    close(F.fftn(T(z3), norm=norm), np.fft.fftn(z3, norm=nn))
    close(F.fftn(T(z3), dim=(2, 0), norm=norm), np.fft.fftn(z3, axes=(2, 0), norm=nn))
    close(F.ifftn(T(z3), s=(3, -1), norm=norm), np.fft.ifftn(z3, s=(3, 3), axes=(1, 2), norm=nn))
    close(F.rfft2(T(X), norm=norm), np.fft.rfft2(X, norm=nn))
    close(F.rfftn(T(x3), norm=norm), np.fft.rfftn(x3, norm=nn))
    close(F.rfftn(T(x3), s=(4, 5), norm=norm), np.fft.rfftn(x3, s=(4, 5), axes=(1, 2), norm=nn))
    close(F.irfft2(T(Z), norm=norm), np.fft.irfft2(Z, norm=nn))
    close(F.irfftn(T(z3), s=(2, 4), norm=norm), np.fft.irfftn(z3, s=(2, 4), axes=(1, 2), norm=nn))
    close(F.irfftn(T(z3), dim=(0, 2), norm=norm), np.fft.irfftn(z3, axes=(0, 2), norm=nn))
    # an explicit 2-D DFT: one matrix per axis
    close(F.fft2(T(Z), norm=norm), dft(dft(Z, True, norm).T, True, norm).T)


def test_transforms_invert_each_other():
    for norm in ("backward", "ortho", "forward"):
        close(F.ifft(F.fft(T(Z), norm=norm), norm=norm), Z)
        close(F.irfft(F.rfft(T(X), norm=norm), n=6, norm=norm), X)
        close(F.ihfft(F.hfft(T(Z), n=7, norm=norm), n=7, norm=norm), hermitian(Z, 7)[..., :4])
        close(F.irfftn(F.rfftn(T(X), norm=norm), s=X.shape, norm=norm), X)


def test_fftfreq_rfftfreq_and_shifts():
    np.testing.assert_allclose(F.fftfreq(5).numpy(), [0, 0.2, 0.4, -0.4, -0.2], rtol=1e-6)
    np.testing.assert_allclose(F.fftfreq(4, d=0.5, dtype=torch.float64).numpy(), np.fft.fftfreq(4, 0.5))
    np.testing.assert_allclose(F.rfftfreq(5, 0.5).numpy(), [0, 0.4, 0.8], rtol=1e-6)
    assert F.fftfreq(4).dtype is torch.float32 and F.fftfreq(4, dtype=torch.float64).dtype is torch.float64
    assert F.fftshift(torch.arange(6)).tolist() == [3, 4, 5, 0, 1, 2]
    assert F.ifftshift(torch.arange(5)).tolist() == [2, 3, 4, 0, 1]
    a = np.arange(12).reshape(3, 4)
    assert F.fftshift(torch.tensor(a)).tolist() == np.fft.fftshift(a).tolist()
    assert F.fftshift(torch.tensor(a), dim=1).tolist() == np.fft.fftshift(a, axes=1).tolist()
    assert F.ifftshift(F.fftshift(torch.tensor(a))).tolist() == a.tolist()


def test_fftn_of_a_0d_tensor():
    assert F.fftn(torch.tensor(2.0)).tolist() == 2 + 0j


@pytest.mark.parametrize("expr, exc, msg", [
    ("F.fft(x, norm='bad')", RuntimeError, 'Invalid normalization mode: "bad"'),
    ("F.fft(x, n=0)", RuntimeError, r"Invalid number of data points \(0\) specified"),
    ("F.fft(x, n=-1)", RuntimeError, r"Invalid number of data points \(-1\) specified"),
    ("F.fft(torch.zeros(0))", RuntimeError, r"Invalid number of data points \(0\) specified"),
    ("F.irfft(torch.tensor([1 + 0j]))", RuntimeError, r"Invalid number of data points \(0\) specified"),
    ("F.rfft(z)", RuntimeError, "rfft expects a real input tensor, but got ComplexFloat"),
    ("F.ihfft(z)", RuntimeError, "ihfft expects a real input tensor, but got ComplexFloat"),
    ("F.fftn(x.reshape(2, 2), s=(2,), dim=(0, 1))", RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    ("F.fftn(x.reshape(2, 2), dim=(0, 0))", RuntimeError, "FFT dims must be unique"),
    ("F.fftn(torch.zeros(2, 3), s=(4, 5, 6))", RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    ("F.fft(x, dim=3)", IndexError, "Dimension out of range"),
    ("F.fft(torch.tensor(1.0))", IndexError, "Dimension specified as -1 but tensor has no dimensions"),
    ("F.fft(torch.zeros(4, dtype=torch.float16))", RuntimeError, "Unsupported dtype Half"),
    ("F.fft([1.0, 2.0])", TypeError, "must be Tensor"),
])
def test_errors(expr, exc, msg):
    x, z = torch.randn(4), torch.randn(4, dtype=torch.cfloat)     # noqa: F841 (used by expr)
    with pytest.raises(exc, match=msg):
        eval(expr)


# -- gradients ----------------------------------------------------------------------------------------
def _c(*shape):
    return torch.tensor(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape), dtype=torch.complex128,
                        requires_grad=True)


def _r(*shape):
    return torch.tensor(RNG.standard_normal(shape), dtype=torch.float64, requires_grad=True)


GRAD_CASES = [
    ("fft", lambda a: F.fft(a), lambda: (_c(5),)),
    ("fft_real_input_padded", lambda a: F.fft(a, n=6, norm="ortho"), lambda: (_r(4),)),
    ("ifft_cut", lambda a: F.ifft(a, n=3, dim=0), lambda: (_c(4, 2),)),
    ("rfft_odd", lambda a: F.rfft(a), lambda: (_r(5),)),
    ("rfft_even_forward", lambda a: F.rfft(a, norm="forward"), lambda: (_r(2, 6),)),
    ("irfft_even", lambda a: F.irfft(a), lambda: (_c(4),)),
    ("irfft_odd_ortho", lambda a: F.irfft(a, n=7, norm="ortho"), lambda: (_c(4),)),
    ("irfft_trimmed", lambda a: F.irfft(a, n=4), lambda: (_c(5),)),
    ("hfft", lambda a: F.hfft(a), lambda: (_c(4),)),
    ("hfft_odd", lambda a: F.hfft(a, n=5, norm="forward"), lambda: (_c(3),)),
    ("ihfft", lambda a: F.ihfft(a), lambda: (_r(5),)),
    ("ihfft_even", lambda a: F.ihfft(a, norm="ortho"), lambda: (_r(6),)),
    ("fft2", lambda a: F.fft2(a), lambda: (_c(2, 3),)),
    ("ifftn_s", lambda a: F.ifftn(a, s=(3, 2)), lambda: (_c(2, 3),)),
    ("rfft2", lambda a: F.rfft2(a), lambda: (_r(3, 4),)),
    ("rfftn_dims", lambda a: F.rfftn(a, dim=(1, 0)), lambda: (_r(3, 3),)),
    ("irfft2", lambda a: F.irfft2(a), lambda: (_c(2, 3),)),
    ("irfftn_s", lambda a: F.irfftn(a, s=(3, 5)), lambda: (_c(2, 3),)),
    ("rfft_then_abs", lambda a: F.rfft(a).abs(), lambda: (_r(6),)),
    ("fftshift", lambda a: F.fftshift(F.fft(a)), lambda: (_c(5),)),
]


@pytest.mark.parametrize("name, fn, make", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_of_every_order(name, fn, make):
    """First and second derivatives against finite differences of the real and imaginary parts."""
    args = make()
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_rfft_gradient_value():
    """The dropped half of the spectrum gets no gradient: d sum(Re rfft(x)) / dx_j = sum_k cos(2 pi jk / n)
    over the kept k = 0 .. n // 2."""
    x = torch.tensor(X[0], requires_grad=True)
    F.rfft(x).real.sum().backward()
    j, k = np.arange(6)[:, None], np.arange(4)[None, :]
    close(x.grad, np.cos(2 * np.pi * j * k / 6).sum(1))


# -- the decomposition and the backend kernels -----------------------------------------------------------
def test_decomposition_matches_the_numpy_kernels():
    """The DFT-by-matmul decompositions of optional_fft agree with the numpy.fft kernels."""
    from tensorplug.dispatch import registry
    from tensorplug.testing.conformance.runner import fallback_table
    backend = registry.compute["numpy"]
    K, N = fallback_table(backend), backend.kernels
    assert K["fft_c2c"] is not N["fft_c2c"]
    z = Z.reshape(3, 2, 3)
    x = X.reshape(3, 2, 3)
    for norm in ("backward", "ortho", "forward"):
        for forward in (True, False):
            for axes in ((2,), (0, 2), (2, 1, 0)):
                np.testing.assert_allclose(K["fft_c2c"](z, axes, norm, forward), N["fft_c2c"](z, axes, norm, forward),
                                           atol=1e-12)
                np.testing.assert_allclose(K["fft_r2c"](x, axes, norm, forward), N["fft_r2c"](x, axes, norm, forward),
                                           atol=1e-12)
                half = np.take(z, range(2), axis=axes[-1])
                for n_last in (2, 3):
                    np.testing.assert_allclose(K["fft_c2r"](half, axes, n_last, norm, forward),
                                               N["fft_c2r"](half, axes, n_last, norm, forward), atol=1e-12)


def test_fft_on_a_backend_without_the_kernels(add_backend):
    """A backend lacking the FFT kernels runs tensorplug.fft through the decomposition, gradients too."""
    b = add_backend("nofft", device_type="nofftdev", drop=("fft_c2c", "fft_r2c", "fft_c2r"))
    assert b.kernel_status()["fft_c2c"] == "decomposed"
    z = torch.tensor(Z, dtype=torch.complex128, device="nofftdev")
    close(F.fft(z, norm="ortho").cpu(), dft(Z, True, "ortho"))
    close(F.irfft(z, n=7).cpu(), dft(hermitian(Z, 7), False).real)
    x = torch.tensor(X, dtype=torch.float64, device="nofftdev", requires_grad=True)
    assert gradcheck(lambda a: F.rfft2(a), (x,))
