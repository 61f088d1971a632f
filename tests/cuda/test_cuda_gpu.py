"""Tests of the real CUDA backend (CuPy on an NVIDIA GPU). Without a usable GPU every test here is
skipped, with the backend's reason (CuPy not installed, no driver, no device): nothing in this file
ran on a machine without one.

- the whole conformance suite on "cuda" (the same checks as `tensorplug backends check cuda`);
- the CUDA lowering of every fused kernel against its array-module lowering (the one the CPU tests
  validate) and against NumPy, the random streams bit for bit;
- TF32 off by default (a float32 matmul as accurate as float32 allows);
- device placement on a second GPU, NCCL in a one-process job.
"""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.cuda
from tensorplug.dispatch import registry
from tensorplug.testing.conformance import pytest_tests

registry.ensure_loaded()
_CUDA = registry.compute["cuda"]
_OK, _WHY = _CUDA.is_available()
_SKIP = pytest.mark.skipif(not _OK, reason=f"no usable CUDA backend here (nothing ran on a GPU): {_WHY}")
pytestmark = _SKIP

if _OK:
    test_cuda_conformance = pytest_tests("cuda")
else:
    @_SKIP
    def test_cuda_conformance():
        """(the conformance suite on "cuda": one test per check when a GPU is present)"""


@pytest.fixture
def fusions():
    """(the CUDA lowering, the array-module lowering), both over CuPy."""
    from tensorplug.backends.cuda_backend.fused import Fusion
    cp = _CUDA.xp
    native, ref = Fusion(cp), Fusion(cp)
    ref.native = False
    assert native.native
    return cp, native, ref


def _close(a, b, rtol, atol=0.0):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol,
                               atol=atol, equal_nan=True)


def test_random_streams_are_bit_exact(fusions):
    """uniform, randint, bits and bernoulli of the CUDA kernels equal the array-module formulas."""
    cp, nat, ref = fusions
    for dt in ("float16", "float32", "float64"):
        a, b = nat.rand_uniform(99, 1000, (513,), dt), ref.rand_uniform(99, 1000, (513,), dt)
        assert cp.asnumpy(a).tobytes() == cp.asnumpy(b).tobytes(), dt
    assert (cp.asnumpy(nat.rand_int(5, 7, -3, 11, (1000,), "int64"))
            == cp.asnumpy(ref.rand_int(5, 7, -3, 11, (1000,), "int64"))).all()
    assert (cp.asnumpy(nat.rand_bits(5, 0, 777)) == cp.asnumpy(ref.rand_bits(5, 0, 777))).all()
    p = cp.asarray(np.linspace(0, 1, 301).reshape(7, 43)[:, ::2])
    assert (cp.asnumpy(nat.bernoulli(3, 0, p)) == cp.asnumpy(ref.bernoulli(3, 0, p))).all()
    for dt, tol in (("float32", 1e-5), ("float64", 1e-12)):
        _close(cp.asnumpy(nat.rand_normal(1, 0, (4096,), dt)), cp.asnumpy(ref.rand_normal(1, 0, (4096,), dt)),
               tol, tol)


def test_fused_math_matches_numpy(fusions):
    """sigmoid, erf, floor_divide / remainder / fmod (NumPy's rounding, integers exact in 64 bits),
    integer power (wrapping); CuPy's own sign maps NaN to 0 (PyTorch's sign, which the backend uses)."""
    import math
    cp, nat, _ = fusions
    edge = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 7.3, -7.3])
    for dt, tol in (("float32", 1e-6), ("float64", 1e-14)):
        x = edge.astype(dt)
        d = cp.asarray(x)
        _close(cp.asnumpy(nat.sigmoid(d)), 1 / (1 + np.exp(-x.astype(np.float64))), tol * 10, 1e-30)
        _close(cp.asnumpy(nat.erf(d)), [math.erf(v) for v in x.astype(np.float64)], tol * 10)
        _close(cp.asnumpy(cp.sign(d)), np.where(np.isnan(x), 0, np.sign(x)), 0)
        y = np.array([3.0, -3.0, 0.1, -0.7, 2.0, 0.3, -4.0, 2.5, 1.5, 3.0, -0.1, 7.0, 0.3, -0.3], dtype=dt)
        with np.errstate(all="ignore"):
            for which, fn in (("div", np.floor_divide), ("mod", np.remainder), ("fmod", np.fmod)):
                _close(cp.asnumpy(nat.divmod_op(which, d, cp.asarray(y))), fn(x, y), 0, 0)
    ints = np.array([7, -7, 7, -7, np.iinfo(np.int64).max, np.iinfo(np.int64).min + 1, 0, 5], dtype=np.int64)
    divs = np.array([2, 2, -2, -2, 3, 7, 3, -5], dtype=np.int64)
    for which, fn in (("div", np.floor_divide), ("mod", np.remainder), ("fmod", np.fmod)):
        assert (cp.asnumpy(nat.divmod_op(which, cp.asarray(ints), cp.asarray(divs))) == fn(ints, divs)).all(), which
    b8 = np.array([6, -6, 3, 2, -128], dtype=np.int8)
    e8 = np.array([5, 5, 4, 7, 1], dtype=np.int8)
    assert (cp.asnumpy(nat.int_pow(cp.asarray(b8), cp.asarray(e8))) == np.power(b8, e8)).all()


def test_fused_nn_kernels_match_their_xp_lowering(fusions):
    cp, nat, ref = fusions
    rng = np.random.default_rng(0)
    for dt, tol in (("float16", 2e-3), ("float32", 1e-5), ("float64", 1e-12)):
        x = cp.asarray(rng.standard_normal((5, 7, 3)).astype(dt))
        for axis in (0, 1, 2):
            _close(cp.asnumpy(nat.softmax(x, axis)), cp.asnumpy(ref.softmax(x, axis)), tol, tol)
            _close(cp.asnumpy(nat.log_softmax(x, axis)), cp.asnumpy(ref.log_softmax(x, axis)), tol, tol)
        acc = "float64" if dt == "float64" else "float32"
        m = cp.asarray(rng.standard_normal((1, 7, 1)).astype(acc))
        s = cp.asarray(rng.uniform(0.5, 2, (1, 7, 1)).astype(acc))
        _close(cp.asnumpy(nat.sq_dev_sum(x, m, (0, 2))), cp.asnumpy(ref.sq_dev_sum(x, m, (0, 2))), tol, tol)
        _close(cp.asnumpy(nat.bn_apply(x, m, s, m)), cp.asnumpy(ref.bn_apply(x, m, s, m)), tol, tol)
        v = cp.asarray(np.array([1.0, np.nan, 3.0, -1.0], dtype=dt))
        results = []
        for f in (nat, ref):
            best = cp.asarray(np.array([2.0, 0.0, np.nan, -np.inf], dtype=dt))
            slot = cp.zeros(4, dtype=np.int32)
            f.pool_step(v, 5, best, slot)
            results.append((cp.asnumpy(best), cp.asnumpy(slot)))
        _close(results[0][0], results[1][0], 0)
        assert (results[0][1] == results[1][1]).all()


def test_tf32_is_off_by_default():
    """A float32 matmul of K = 4096 stays within float32 accuracy (TF32 would be ~1e-3 off)."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((256, 4096)), rng.standard_normal((4096, 256))
    got = (torch.tensor(a, dtype=torch.float32, device="cuda") @ torch.tensor(b, dtype=torch.float32,
                                                                             device="cuda")).cpu().numpy()
    want = a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < 1e-5 and not tensorplug.cuda.is_tf32_enabled()


def test_results_stay_0d_on_the_device():
    x = torch.arange(10.0, device="cuda")
    s = x.sum()
    assert isinstance(s._data, _CUDA.xp.ndarray) and s._data.ndim == 0 and s.item() == 45.0


@pytest.mark.skipif(not _OK or _CUDA.device_count() < 2, reason="needs two GPUs")
def test_second_gpu_placement():
    x = torch.randn(64, 64, device="cuda:1")
    y = torch.softmax(x @ x, 1).sum(0)
    assert x._data.device.id == 1 and y._data.device.id == 1
    assert abs(y.sum().item() - 64.0) < 1e-3
    assert (x.to("cuda:0") @ x.to("cuda:0")).device == torch.device("cuda:0")


def test_nccl_one_process_all_reduce():
    import tensorplug.distributed as dist
    nccl = registry.communication["nccl"]
    ok, why = nccl.is_available()
    if not ok:
        pytest.skip(f"nccl unavailable: {why}")
    dist.init_process_group("nccl")
    try:
        t = torch.arange(8.0, device="cuda")
        dist.all_reduce(t)
        dist.broadcast(t, 0)
        assert t.tolist() == list(np.arange(8.0))
    finally:
        dist.destroy_process_group()


def test_complex_views_and_fft_on_the_gpu():
    """view_as_real / view_as_complex alias device memory (a non-contiguous input too), the parts
    are views, torch.fft on cuda matches NumPy and its gradients stay on the device."""
    import tensorplug.fft as F
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    t = torch.tensor(z, dtype=torch.complex128, device="cuda")
    v = torch.view_as_real(t)
    v[0, 0, 1] = 5.0
    assert t[0, 0].item() == complex(z[0, 0].real, 5.0)
    t.imag[1] = 0.0
    assert (t.cpu().numpy()[1].imag == 0).all()
    pairs = torch.zeros(4, 3, 2, dtype=torch.float64, device="cuda")[:, ::2]     # rows strided, pairs contiguous
    c = torch.view_as_complex(pairs)
    c[0, 1] = 2 - 3j
    assert pairs[0, 1].tolist() == [2.0, -3.0]
    x = rng.standard_normal((2, 6))
    _close(F.rfft(torch.tensor(x, device="cuda")).cpu().numpy().real, np.fft.rfft(x).real, 1e-12, 1e-12)
    _close(F.ifft2(torch.tensor(z, device="cuda"), norm="ortho").cpu().numpy().imag,
           np.fft.ifft2(z, norm="ortho").imag, 1e-12, 1e-12)
    _close(F.irfft(torch.tensor(z, device="cuda"), n=7).cpu().numpy(), np.fft.irfft(z, n=7), 1e-12, 1e-12)
    xg = torch.tensor(x, device="cuda", requires_grad=True)
    F.rfft(xg).abs().sum().backward()
    assert xg.grad.device == xg.device and xg.grad.dtype is torch.float64
