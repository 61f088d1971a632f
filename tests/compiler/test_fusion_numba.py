"""The NumPy backend's numba fusion (backends/numpy_backend/fusion_numba.py) and its vectorizable float32
math (numba_math.py): values against float64 references and against the NumPy kernels op by op,
every input layout, and what is declined."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug._dynamo.utils import counters
from tensorplug.compiler.fusion import PointwiseProgram as P

numba = pytest.importorskip("numba", reason="numba (the `fast` extra) compiles the fused loops")
from tensorplug.backends.numpy_backend import fusion_numba, numba_loops, numba_math  # noqa: E402
from tensorplug.backends.numpy_backend.kernels import build as numpy_kernels  # noqa: E402

if numba_loops.cached(fusion_numba._state, fusion_numba._build) is None:
    pytest.skip("TENSORPLUG_NUMBA=0: the numba loops are off", allow_module_level=True)

K = numpy_kernels()
F32 = np.float32
SUBNORMAL_STEP = float(np.finfo(np.float32).smallest_subnormal)


def _ulps(a, b):
    """|a - b| in float32 ulps (ordered integer distance of the bit patterns)."""
    def ordered(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


@pytest.fixture(scope="module")
def vector_math():
    fns = numba_math.build(numba)
    loops = {}
    for name, fn in fns.items():
        @numba.njit
        def loop(x, out, fn=fn):
            for i in range(x.size):
                out[i] = fn(x[i])
        loops[name] = lambda x, loop=loop: (lambda out: (loop(x, out), out)[1])(np.empty_like(x))
    return loops


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 1e-8, -88.72, 88.72, 88.73, -103.9],
                    np.float32)


def test_exp_within_one_ulp_and_its_ends(vector_math):
    x = np.concatenate([np.linspace(-110, 90, 2_000_001, dtype=np.float32), SPECIALS])
    got = vector_math["exp"](x)
    with np.errstate(over="ignore", under="ignore"):
        exact = np.exp(x.astype(np.float64))
        want = exact.astype(np.float32)
    normal = np.isfinite(want) & (want >= np.finfo(np.float32).tiny)
    assert _ulps(got[normal], want[normal]).max() <= 1
    sub = (want < np.finfo(np.float32).tiny) & np.isfinite(x)
    assert np.abs(got[sub].astype(np.float64) - exact[sub]).max() <= SUBNORMAL_STEP
    assert np.isnan(got[x != x]).all() and got[x == np.inf][0] == np.inf and got[x == -np.inf][0] == 0
    assert (got[x > 88.73] == np.inf).all() and (got[x < -104] == 0).all()


def test_tanh_within_one_ulp_near_zero_and_far(vector_math):
    x = np.concatenate([np.linspace(-12, 12, 2_000_001, dtype=np.float32),
                        np.linspace(-0.7, 0.7, 200_001, dtype=np.float32), SPECIALS])
    got = vector_math["tanh"](x)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    finite = np.isfinite(x)
    assert _ulps(got[finite], want[finite]).max() <= 1
    assert np.isnan(got[x != x]).all() and got[x == np.inf][0] == 1 and got[x == -np.inf][0] == -1
    assert np.signbit(got[(x == 0) & np.signbit(x)]).all()           # tanh(-0) = -0


def test_sigmoid_against_float64_and_its_ends(vector_math):
    x = np.concatenate([np.linspace(-110, 110, 2_000_001, dtype=np.float32), SPECIALS])
    got = vector_math["sigmoid"](x)
    with np.errstate(over="ignore"):
        exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    finite = np.isfinite(x) & (exact >= np.finfo(np.float32).tiny)
    np.testing.assert_allclose(got[finite], exact[finite], rtol=2.5e-7)
    # as the NumPy kernel: 0 where exp(-x) overflows float32 (x below -88.7), 1 from x = 17 on
    assert (got[x < -88.8] == 0).all() and (got[(x > 17) & finite] == 1).all() and np.isnan(got[x != x]).all()


def _program(steps, inputs=("float32",), dtype="float32", float_dtype="float32"):
    return P(list(inputs), steps, dtype, float_dtype)


def _op_by_op(program, *arrays):
    return fusion_numba._op_by_op(program, arrays)


ARITH = [("mul", (("in", 0), ("const", 1.5))), ("add", (("step", 0), ("in", 1))),
         ("sub", (("step", 1), ("const", 3))), ("div", (("step", 2), ("in", 1))),
         ("maximum", (("step", 3), ("in", 0))), ("minimum", (("step", 4), ("const", 2.0))),
         ("neg", (("step", 5),)), ("abs", (("step", 6),)), ("sqrt", (("step", 7),))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("b_shape", [(64, 80), (80,), (1, 80), (64, 1), (), (1, 1)],
                         ids=["full", "row", "row2d", "col", "scalar", "size1"])
def test_arithmetic_is_bit_identical_to_the_kernels_for_each_layout(dtype, b_shape):
    """No fast-math in the program's loop: each step rounds as the NumPy ufunc does."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=(64, 80)).astype(dtype)
    b = rng.normal(size=b_shape).astype(dtype)
    a.ravel()[::17] = np.nan
    program = _program(ARITH, (dtype, dtype), dtype, dtype)
    kernel = fusion_numba.fuse_pointwise(program)
    got, want = kernel(a, b), _op_by_op(program, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_transposed_and_middle_broadcast_inputs_run_op_by_op_with_eager_layout():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(40, 60)).astype(F32).T                    # F-contiguous
    program = _program(ARITH, ("float32", "float32"))
    kernel = fusion_numba.fuse_pointwise(program)
    b = rng.normal(size=(40,)).astype(F32)
    got, want = kernel(a, b[None, :]), _op_by_op(program, a, b[None, :])
    assert got.strides == want.strides
    np.testing.assert_array_equal(got, want)
    c, d = rng.normal(size=(4, 5, 6)).astype(F32), rng.normal(size=(4, 1, 6)).astype(F32)
    np.testing.assert_array_equal(kernel(c, d), _op_by_op(program, c, d))


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -0.5, -1, -2, 2.0])
def test_pow_by_the_kernels_products(exponent):
    program = _program([("abs", (("in", 0),)), ("pow", (("step", 0), ("const", exponent)))])
    x = np.random.default_rng(3).normal(size=5000).astype(F32)
    np.testing.assert_array_equal(fusion_numba.fuse_pointwise(program)(x), _op_by_op(program, x))


def test_transcendentals_where_and_comparisons_against_float64():
    steps = [("gt", (("in", 0), ("const", 0))), ("tanh", (("in", 0),)), ("exp", (("in", 1),)),
             ("where", (("step", 0), ("step", 1), ("step", 2))), ("sigmoid", (("in", 1),)),
             ("where", (("in", 2), ("step", 3), ("step", 4)))]
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-5, 5, 6000).astype(F32), rng.uniform(-5, 5, 6000).astype(F32)
    m = rng.random(6000) < 0.5
    got = fusion_numba.fuse_pointwise(_program(steps, ("float32", "float32", "bool")))(x, y, m)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    want = np.where(m, np.where(x > 0, np.tanh(x64), np.exp(y64)), 1 / (1 + np.exp(-y64)))
    np.testing.assert_allclose(got, want, rtol=3e-7)
    cmp = fusion_numba.fuse_pointwise(_program([("exp", (("in", 0),)), ("ge", (("step", 0), ("in", 1)))],
                                               ("float32", "float32"), "bool"))(x, y)
    assert cmp.dtype == np.bool_
    agree = cmp == (np.exp(x64) >= y64)
    assert agree.mean() > 0.999                     # ties at float32 rounding only


def test_what_no_loop_computes_is_declined():
    f = fusion_numba.fuse_pointwise
    assert f(_program([("log", (("in", 0),)), ("mul", (("step", 0), ("const", 2)))])) is None
    assert f(_program([("exp", (("in", 0),)), ("add", (("step", 0), ("const", 1)))], ("float64",),
                      "float64", "float64")) is None           # libm per element: op by op is faster
    assert f(_program([("pow", (("in", 0), ("const", 1.7)))])) is None
    assert f(_program([("pow", (("in", 0), ("in", 1)))], ("float32", "float32"))) is None
    assert f(_program([("where", (("in", 0), ("in", 1), ("in", 2)))], ("float32",) * 3)) is None
    assert f(_program([("mul", (("in", 0), ("const", 10 ** 400)))])) is None


def test_constants_are_arguments_one_loop_serves_every_value():
    def prog(c):
        return _program([("mul", (("in", 0), ("const", c))), ("tanh", (("step", 0),))])
    x = np.linspace(-2, 2, 5000, dtype=F32)
    a, b = fusion_numba.fuse_pointwise(prog(0.5)), fusion_numba.fuse_pointwise(prog(3))
    a(x)
    before = len(fusion_numba._loops)
    np.testing.assert_allclose(b(x), np.tanh(3 * x.astype(np.float64)), rtol=2e-7, atol=1e-7)
    assert len(fusion_numba._loops) == before


def test_compiled_function_fuses_with_the_default_engine(monkeypatch):
    monkeypatch.delenv("TENSORPLUG_FUSE", raising=False)
    torch._dynamo.reset()

    def f(x, bias):
        return ((x * 1.5).tanh() * x + (x + bias).exp() * 0.1).abs().sqrt() + x.sigmoid()
    cf = torch.compile(f)
    x = torch.tensor(np.random.default_rng(5).uniform(-3, 3, (100, 64)).astype(F32))
    bias = torch.tensor(np.random.default_rng(6).uniform(-1, 1, 64).astype(F32))
    fusion_numba._loops.clear()
    got = cf(x, bias)                     # the capture (eager values) compiles the loop for these shapes
    assert len(fusion_numba._loops) == 1
    got = cf(x, bias)                     # the replay runs it
    assert counters["stats"]["fused_kernels"] == 1 and len(fusion_numba._loops) == 1
    x64, b64 = x.numpy().astype(np.float64), bias.numpy().astype(np.float64)
    want = np.sqrt(np.abs(np.tanh(1.5 * x64) * x64 + np.exp(x64 + b64) * 0.1)) + 1 / (1 + np.exp(-x64))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(got.numpy(), f(x, bias).numpy(), rtol=1e-6)
    torch._dynamo.reset()
