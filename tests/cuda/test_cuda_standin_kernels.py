"""The CUDA backend's kernels over the NumPy-based CuPy stand-in: every differentiable op of the op
table (tests/autograd/test_op_gradients.py) gives the same values and gradients as on cpu, and the
CuPy differences the backend absorbs (scatter_add dtypes, value-based scalar casting, singular
matrices, sorting, RNG streams) are handled. This validates the backend's logic on the CPU; it
proves nothing about CuPy or a GPU."""
import copy
import importlib.util
import pathlib

import numpy as np
import pytest
from _standin import make_standin

import fake_cupy
import tensorplug as torch
from tensorplug.backends.cuda_backend.fused import GOLDEN, mix64
from tensorplug.backends.cuda_backend.kernels import CudaRng

_OPS = pathlib.Path(__file__).resolve().parents[1] / "autograd" / "test_op_gradients.py"


def _op_cases():
    spec = importlib.util.spec_from_file_location("tensorplug_op_gradient_cases", _OPS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES


def _to(v, dev):
    if isinstance(v, torch.Tensor):
        t = v.detach().to(dev)
        return t.requires_grad_() if v.requires_grad else t
    if isinstance(v, (list, tuple)):
        return type(v)(_to(x, dev) for x in v)
    return v


def _outs(r):
    if isinstance(r, torch.Tensor):
        return [r]
    return [o for o in r if isinstance(o, torch.Tensor)]


def _leaves(v):
    if isinstance(v, torch.Tensor):
        return [v] if v.requires_grad else []        # (the cpu side filters out non-leaves)
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _leaves(x)]
    return []


@pytest.mark.parametrize("case", _op_cases(), ids=repr)
def test_op_matches_cpu(fakecuda, case):
    """Values and first gradients of the op on fakecuda equal those on cpu (float64)."""
    args = case.make()
    dargs = _to(args, "fakecuda")
    want = _outs(case.fn(*args))
    try:
        got = _outs(case.fn(*dargs))
    except RuntimeError as e:
        if "same device" in str(e) and "cpu" in str(e):
            pytest.skip("the case's function makes cpu tensors itself (e.g. torch.tensor(...) without device)")
        raise
    except TypeError as e:
        if "NumPy array where a device array is expected" in str(e):
            # the case mixes a cpu tensor in, and the frontend handed its NumPy array to the device
            # kernel instead of raising the device-mismatch error (batch_norm's running stats,
            # embedding_bag's indices/offsets): a frontend gap, reported, not the backend's
            pytest.xfail(f"frontend passes a cpu tensor's array to a device kernel: {e}")
        raise
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g.device == torch.device("fakecuda:0") and g.dtype is w.dtype
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), rtol=1e-9, atol=1e-12)
    # (.real: a complex output contributes its real part, so the loss is real; real outputs pass through)
    total_w = sum(o.sum().real for o in want if o.requires_grad)
    total_g = sum(o.sum().real for o in got if o.requires_grad)
    if not isinstance(total_w, torch.Tensor):
        return
    total_w.backward()
    total_g.backward()
    for a, d in zip(_leaves(args), _leaves(dargs)):
        if a.grad_fn is not None:                   # a non-leaf input: no .grad to compare
            continue
        if a.grad is None:
            assert d.grad is None
            continue
        assert d.grad.device == torch.device("fakecuda:0")
        np.testing.assert_allclose(d.grad.cpu().numpy(), a.grad.numpy(), rtol=1e-9, atol=1e-12)


# -- accumulation with repeated indices ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                                   "bool"])
def test_index_put_accumulate_every_dtype(fakecuda, dtype):
    """x.index_put_(idx, v, accumulate=True) sums repeated indices for every dtype, although the
    stand-in's scatter_add (like CuPy's atomicAdd) takes only float32, int32, uint32 and uint64."""
    dt = getattr(torch, dtype)
    vals = [1, 1, 1, 0] if dtype == "bool" else [1, 2, 3, 4]
    x = torch.zeros(3, dtype=dt, device="fakecuda")
    x.index_put_((torch.tensor([2, 0, 2, 2], device="fakecuda"),), torch.tensor(vals, dtype=dt, device="fakecuda"),
                 accumulate=True)
    want = [True, False, True] if dtype == "bool" else [2, 0, 8]
    assert x.tolist() == want


def test_scatter_add_fallbacks_are_recorded(fakecuda):
    """float16 and float64 try cupyx.scatter_add first (newer CuPy takes them) and fall back once."""
    b = fakecuda
    for dt in (torch.float16, torch.float64):
        x = torch.zeros(2, dtype=dt, device="fakecuda")
        x.index_add_(0, torch.tensor([1, 1], device="fakecuda"), torch.ones(2, dtype=dt, device="fakecuda"))
        assert x.tolist() == [0.0, 2.0]
    assert b.fallbacks == {"scatter_add_float16": False, "scatter_add_float64": False}


def test_scatter_add_native_when_cupy_takes_the_dtype(standin_state):
    """With a scatter_add that takes float16/float64 (CuPy >= 13.x), no fallback is used."""
    fake_cupy.reset(scatter_add=("float16", "float32", "float64", "int32", "uint32", "uint64"))
    b = make_standin()
    K = b.kernels
    x = K["full"]((3,), 0, "float64")
    K["index_put"](x, (K["from_numpy"](np.array([1, 1, 2])),), K["full"]((3,), 0.5, "float64"), True)
    assert K["to_numpy"](x).tolist() == [0.0, 1.0, 0.5] and b.fallbacks == {}


def test_scatter_is_last_write_wins(fakecuda):
    """scatter with repeated indices keeps the value written last (row-major order), like NumPy; CuPy's
    own setitem would keep an undefined one."""
    K = fakecuda.kernels
    x = K["full"]((2, 3), 0, "int64")
    idx = K["from_numpy"](np.array([[1, 1, 1], [0, 2, 0]]))
    src = K["from_numpy"](np.array([[5, 6, 7], [8, 9, 10]]))
    K["scatter"](x, idx, src, 1)
    assert K["to_numpy"](x).tolist() == [[0, 7, 0], [10, 0, 9]]


# -- CuPy's dtype and error behaviour ------------------------------------------------------------------
def test_python_scalars_do_not_widen_results(standin_state, monkeypatch):
    """CuPy 13 types a Python scalar by its value (int8 array + 1000 -> int16); binary kernels cast
    back to the operand's dtype."""
    real = fake_cupy.add

    def legacy_add(x, y, out=None):
        if out is not None:
            return real(x, y, out=out)
        r = real(x, y)
        return r.astype("int16") if r.dtype == np.int8 and isinstance(y, int) else r
    monkeypatch.setattr(fake_cupy, "add", legacy_add)
    K = make_standin().kernels
    r = K["add"](K["from_numpy"](np.array([100, -100], dtype=np.int8)), 100)
    assert r.dtype == np.int8 and K["to_numpy"](r).tolist() == [-56, 0]


def test_singular_matrix_raises(fakecuda):
    """inv/solve of a singular matrix raise LinAlgError: the kernel turns CuPy's check on
    (cupyx.errstate(linalg="raise")), without which the stand-in, like CuPy, returns NaN."""
    a = torch.tensor([[1.0, 2.0], [2.0, 4.0]], device="fakecuda")
    with pytest.raises(RuntimeError, match="singular"):
        torch.linalg.inv(a)
    with pytest.raises(RuntimeError, match="singular"):
        torch.linalg.solve(a, torch.ones(2, 1, device="fakecuda"))
    assert np.isnan(fake_cupy.asnumpy(fake_cupy.linalg.inv(a._data))).all()


def test_host_arrays_are_refused_like_cupy(standin_state):
    """The stand-in refuses NumPy arrays where CuPy does (so the kernels above never pass one)."""
    x = fake_cupy.asarray(np.arange(3.0))
    with pytest.raises(TypeError):
        fake_cupy.add(x, np.arange(3.0))
    with pytest.raises(TypeError):
        fake_cupy.add(x, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(x)
    with pytest.raises(TypeError):
        x[np.array([0, 1])]


def test_argsort_nan_and_ties(fakecuda):
    """Stable, NaN last ascending and first descending, on any CuPy NaN ordering."""
    x = torch.tensor([2.0, float("nan"), 1.0, 2.0, float("nan"), -1.0], device="fakecuda")
    assert x.argsort().tolist() == [5, 2, 0, 3, 1, 4]
    assert x.argsort(descending=True).tolist() == [1, 4, 0, 3, 2, 5]
    assert torch.tensor([3, 1, 3, 2], device="fakecuda").argsort(descending=True, stable=True).tolist() == [0, 2, 3, 1]


# -- random numbers ------------------------------------------------------------------------------------
def test_rng_stream_is_splitmix64_of_key_plus_counter(fakecuda):
    """uniform float64 value i of a fresh state seeded s is (mix(mix(s) + i * GOLDEN) >> 11) * 2**-53:
    the stream the CUDA kernel produces too (test_cuda_gpu.py compares them bit for bit)."""
    K = fakecuda.kernels
    st = K["rng_new"](123)
    got = K["to_numpy"](K["uniform"](st, (4,), "float64")).tolist()
    key = mix64(123)
    want = [(mix64((key + i * GOLDEN) % 2**64) >> 11) * 2.0 ** -53 for i in range(4)]
    assert got == want and st.offset == 4


def test_rng_counters_advance_and_states_copy(fakecuda):
    """Draws consume counters: two draws of n equal one draw of 2n; a deep copy replays."""
    K = fakecuda.kernels
    a, b = K["rng_new"](5), K["rng_new"](5)
    first = K["to_numpy"](K["uniform"](a, (3,), "float32")).tolist()
    snap = copy.deepcopy(a)
    second = K["to_numpy"](K["uniform"](a, (3,), "float32")).tolist()
    assert first + second == K["to_numpy"](K["uniform"](b, (6,), "float32")).tolist()
    assert K["to_numpy"](K["uniform"](snap, (3,), "float32")).tolist() == second
    assert isinstance(a, CudaRng) and repr(a).startswith("<CudaRng seed=5")


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_uniform_never_reaches_one(fakecuda, dtype):
    """Draws have as many random bits as the dtype's significand: never rounded up to 1.0."""
    K = fakecuda.kernels
    v = K["to_numpy"](K["uniform"](K["rng_new"](0), (200000,), dtype))
    assert v.max() < 1.0 and v.min() >= 0.0
