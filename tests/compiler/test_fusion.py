"""Pointwise fusion of compiled tapes: chains of elementwise kernels become one backend kernel
(on the NumPy backend a numba loop by default, numexpr with TENSORPLUG_FUSE=numexpr) and give
eager's values to float rounding. Every test runs with each engine."""
import importlib.util

import numpy as np
import pytest

import tensorplug as torch
from tensorplug._dynamo.utils import counters
from tensorplug.compiler import fusion

N = 5000          # above fusion.MIN_ELEMENTS
# what the numba loops compute (backends/numpy_backend/fusion_numba.py); the rest runs op by op
NUMBA_UNARY = {"float32": {"neg", "exp", "sqrt", "tanh", "abs", "sigmoid"}, "float64": {"neg", "sqrt", "abs"}}


@pytest.fixture(autouse=True, params=["numba", "numexpr"])
def engine(request, monkeypatch):
    if request.param == "numexpr" and importlib.util.find_spec("numexpr") is None:
        pytest.skip("numexpr (the `compile` extra) is not installed")
    if request.param == "numba":
        from tensorplug.backends.numpy_backend import fusion_numba, numba_loops
        if numba_loops.cached(fusion_numba._state, fusion_numba._build) is None:
            pytest.skip("numba (the `fast` extra) is not installed or TENSORPLUG_NUMBA=0")
    monkeypatch.setenv("TENSORPLUG_FUSE", request.param)
    torch._dynamo.reset()
    yield request.param
    torch._dynamo.reset()


def _entry(fn):
    (entry,) = fn.cache.values()
    return entry


def _x(seed=0, dtype=torch.float32, n=N, low=-3.0, high=3.0):
    return torch.tensor(np.random.default_rng(seed).uniform(low, high, n), dtype=dtype)


UNARY = {"neg": lambda x: -x, "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.5),
         "sqrt": lambda x: torch.sqrt(x.abs()), "tanh": torch.tanh, "sin": torch.sin, "cos": torch.cos,
         "abs": torch.abs, "sigmoid": torch.sigmoid, "expm1": torch.expm1, "log1p": lambda x: torch.log1p(x.abs())}
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / (b.abs() + 1), "pow": lambda a, b: a.abs() ** b,
          "maximum": torch.maximum, "minimum": torch.minimum}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_each_unary_kernel_fused_in_a_chain(name, dtype, engine):
    def f(x):
        return UNARY[name](x * 0.75 + 0.25) * 2.0
    cf = torch.compile(f)
    x = _x(1, dtype)
    for _ in range(2):
        got = cf(x)
    if engine == "numba" and name not in NUMBA_UNARY[str(dtype).rpartition(".")[2]]:
        # declined: the ops around it still fuse (x * 0.75 + 0.25), the kernel and the last mul do not
        assert counters["stats"]["fused_kernels"] == 1 and len(_entry(cf).forward) >= 3
    else:
        assert counters["stats"]["fused_kernels"] == 1 and len(_entry(cf).forward) <= 2
    rtol = 2e-6 if dtype is torch.float32 else 1e-13
    assert got.dtype is dtype
    np.testing.assert_allclose(got.numpy(), f(x).numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_each_binary_kernel_fused_with_broadcasting(name):
    def f(a, b):
        return BINARY[name](a * 1.5, b - 0.5) + 1.0
    cf = torch.compile(f)
    a, b = _x(2).reshape(50, 100), _x(3, n=100)
    for _ in range(2):
        got = cf(a, b)
    assert counters["stats"]["fused_kernels"] == 1
    np.testing.assert_allclose(got.numpy(), f(a, b).numpy(), rtol=2e-6, atol=2e-6)


def test_nan_propagation_comparisons_and_where():
    def f(a, b):
        return torch.where(a > 0, torch.maximum(a, b) * 2, torch.minimum(a, b) - 1)
    cf = torch.compile(f)
    a, b = _x(4), _x(5)
    a[::7] = float("nan")
    b[::11] = float("nan")
    for _ in range(2):
        got = cf(a, b)
    want = f(a, b).numpy()
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_fused_backward_of_a_pointwise_chain_matches_eager_and_finite_differences():
    def f(x):
        return ((x * 1.5).tanh() * x + x.sigmoid()).sum()
    cf = torch.compile(f)
    x0 = np.random.default_rng(6).uniform(-2, 2, N)
    for _ in range(2):
        x = torch.tensor(x0, requires_grad=True)
        cf(x).backward()
    assert _entry(cf).fused[1] >= 1                   # the backward tape fused too
    h = 1e-6
    t = lambda v: np.tanh(1.5 * v) * v + 1 / (1 + np.exp(-v))  # noqa: E731
    np.testing.assert_allclose(x.grad.numpy(), (t(x0 + h) - t(x0 - h)) / (2 * h), rtol=1e-6, atol=1e-8)


def test_small_arrays_mixed_dtypes_and_outputs_are_not_fused():
    small = torch.compile(lambda x: (x * 2 + 1).exp())
    small(torch.ones(10))
    small(torch.ones(10))
    mixed = torch.compile(lambda a, b: (a * 2 + b.float()).exp())
    np.testing.assert_allclose(mixed(_x(7), _x(8, torch.float64)).numpy(),
                               np.exp(_x(7).numpy() * 2 + _x(8, torch.float64).numpy().astype(np.float32)), rtol=1e-6)
    both = torch.compile(lambda x: ((x * 2).exp(), x * 2))
    y, z = both(_x(9))
    assert counters["stats"]["fused_kernels"] == 1     # only (x * 2) is shared: exp stays, the mixed tree fuses
    np.testing.assert_allclose(y.numpy(), np.exp(_x(9).numpy() * 2), rtol=1e-6)
    np.testing.assert_array_equal(z.numpy(), _x(9).numpy() * 2)


def test_a_backend_without_the_capability_runs_op_by_op(monkeypatch):
    from tensorplug.backends.numpy_backend import NumpyBackend
    monkeypatch.setattr(NumpyBackend, "fuse_pointwise", lambda self, program: None)
    cf = torch.compile(lambda x: (x * 2 + 1).tanh())
    x = _x(10)
    np.testing.assert_array_equal(cf(x).numpy(), cf(x).numpy())
    np.testing.assert_array_equal(cf(x).numpy(), np.tanh(x.numpy() * np.float32(2) + np.float32(1)))
    assert counters["stats"]["fused_kernels"] == 0 and len(_entry(cf).forward) == 3


@pytest.mark.parametrize("setting", [None, "none"])
def test_numba_is_the_default_engine_and_none_turns_fusion_off(monkeypatch, setting, engine):
    if engine != "numba":
        pytest.skip("about the default engine")
    if setting is None:
        monkeypatch.delenv("TENSORPLUG_FUSE")
    else:
        monkeypatch.setenv("TENSORPLUG_FUSE", setting)
    cf = torch.compile(lambda x: (x * 2 + 1).tanh())
    x = _x(14)
    np.testing.assert_allclose(cf(x).numpy(), (x * 2 + 1).tanh().numpy(), rtol=2e-6, atol=1e-7)
    fused = counters["stats"]["fused_kernels"]
    assert (fused, len(_entry(cf).forward)) == ((1, 1) if setting is None else (0, 3))


def test_backend_eager_captures_without_fusing():
    cf = torch.compile(lambda x: (x * 2 + 1).tanh(), backend="eager")
    x = _x(11)
    np.testing.assert_array_equal(cf(x).numpy(), (x * 2 + 1).tanh().numpy())
    assert counters["stats"]["fused_kernels"] == 0


def test_program_of_a_tree():
    """The PointwiseProgram handed to the backend: inputs once each, constants inline, the root last."""
    seen = []
    from tensorplug.backends.numpy_backend import NumpyBackend
    orig = NumpyBackend.fuse_pointwise

    def spy(self, program):
        seen.append(program)
        return orig(self, program)
    NumpyBackend.fuse_pointwise = spy
    try:
        torch.compile(lambda a, b: (a * b + a).exp())(_x(12), _x(13))
    finally:
        NumpyBackend.fuse_pointwise = orig
    (p,) = seen
    assert p.inputs == ["float32", "float32"] and p.dtype == "float32" and p.float_dtype == "float32"
    assert p.steps == [("mul", (("in", 0), ("in", 1))), ("add", (("step", 0), ("in", 0))), ("exp", (("step", 1),))]
    assert fusion.MIN_OPS == 2


def test_programs_no_kernel_can_run_are_declined(engine):
    if engine == "numba":
        from tensorplug.backends.numpy_backend.fusion_numba import fuse_pointwise
    else:
        from tensorplug.backends.numpy_backend.fusion_numexpr import fuse_pointwise
    P = fusion.PointwiseProgram
    assert fuse_pointwise(P(["float32", "float32", "float32"],
                            [("where", (("in", 0), ("in", 1), ("in", 2)))], "float32", "float32")) is None
    assert fuse_pointwise(P(["float32"], [("mul", (("in", 0), ("const", 10 ** 400)))], "float32", "float32")) is None
    assert fuse_pointwise(P(["float32"], [("nope", (("in", 0),))], "float32", "float32")) is None
    k = fuse_pointwise(P(["float32"], [("mul", (("in", 0), ("const", 2))), ("exp", (("step", 0),))],
                         "float32", "float32"))
    x = np.linspace(-1, 1, 10, dtype=np.float32)
    np.testing.assert_allclose(k(x), np.exp(2 * x), rtol=1e-6)
