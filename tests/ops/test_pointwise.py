"""Pointwise ops: values against float64 NumPy, dtypes against PyTorch's promotion, gradients
against finite differences (first and second order), broadcasting and in-place rules."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tensorplug as torch
from tensorplug.autograd import gradcheck, gradgradcheck


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def randt(*shape, low=-2.0, high=2.0, seed=0, dtype=torch.float64, requires_grad=False):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(low, high, size=shape), dtype=dtype, requires_grad=requires_grad)


# -- broadcasting (seed 000) -------------------------------------------------------------------
def test_seed_broadcast_size():
    x = torch.FloatTensor(5, 1, 4, 1)
    y = torch.FloatTensor(3, 1, 1)
    assert (x + y).size() == (5, 3, 4, 1)
    assert repr((x + y).size()) == "tensorplug.Size([5, 3, 4, 1])"
    x = torch.FloatTensor(5, 3, 4, 1)
    assert (x + y).size() == (5, 3, 4, 1)


def test_seed_broadcast_error_message():
    x = torch.FloatTensor(5, 2, 4, 1)
    y = torch.FloatTensor(3, 1, 1)
    with pytest.raises(RuntimeError) as e:
        (x + y).size()
    assert str(e.value) == ("The size of tensor a (2) must match the size of tensor b (3) at "
                            "non-singleton dimension 1")


def test_inplace_broadcasts_right_operand_only():
    x = torch.zeros(3, 1)
    y = torch.ones(1, 4)
    with pytest.raises(RuntimeError, match=r"output with shape \[3, 1\] doesn't match the broadcast shape \[3, 4\]"):
        x.add_(y)
    z = torch.zeros(2, 3)
    z.add_(torch.tensor([1.0, 2.0, 3.0]))
    assert z.tolist() == [[1, 2, 3], [1, 2, 3]]


def test_inplace_cast_rules():
    i = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(1.5)
    f = torch.tensor([1.0, 2.0])
    f.add_(torch.tensor([1, 1]))
    assert f.dtype is torch.float32 and f.tolist() == [2.0, 3.0]


shapes = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4)


@settings(max_examples=150, deadline=None)
@given(shapes, st.sampled_from(["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "lt", "ge", "eq"]),
       st.integers(0, 2**31 - 1), st.booleans())
def test_binary_broadcasting_matches_numpy(bshapes, op, seed, noncontig):
    rng = np.random.default_rng(seed)
    sa, sb = bshapes.input_shapes
    a = rng.uniform(-3, 3, size=sa)
    b = rng.uniform(0.5, 3, size=sb) * rng.choice([-1, 1], size=sb)
    ta, tb = torch.tensor(a), torch.tensor(b)
    if noncontig and len(sa) >= 2:
        # same values through a transposed (non-contiguous) view
        ta = torch.tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1))).permute(
            1, 0, *range(2, len(sa)))
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
           "minimum": np.minimum, "atan2": np.arctan2, "lt": np.less, "ge": np.greater_equal,
           "eq": np.equal}[op](a, b)
    out = getattr(torch, op)(ta, tb)
    assert tuple(out.shape) == bshapes.result_shape
    np.testing.assert_allclose(f64(out), ref.astype(np.float64), rtol=1e-12, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(shapes, st.sampled_from([torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16,
                                torch.float32, torch.float64, torch.bool]),
       st.sampled_from([torch.int8, torch.int16, torch.int64, torch.float32, torch.float64, torch.bool]))
def test_binary_dtype_follows_promotion(bshapes, da, db):
    sa, sb = bshapes.input_shapes
    a = torch.ones(*sa, dtype=da)
    b = torch.ones(*sb, dtype=db)
    expected = torch.result_type(a, b)
    if expected is torch.bool:
        assert (a * b).dtype is torch.bool
    else:
        assert (a + b).dtype is expected
        assert (a * b).dtype is expected
    assert (a / b).dtype is (expected if expected.is_floating_point else torch.float32)
    assert (a < b).dtype is torch.bool


def test_scalar_promotion():
    i = torch.tensor([1, 2, 3])
    assert (i + 2.5).dtype is torch.float32
    assert (i * 2).dtype is torch.int64
    assert (2 - i).tolist() == [1, 0, -1]
    assert (torch.tensor([1, 2], dtype=torch.uint8) + 1).dtype is torch.uint8
    assert (torch.tensor([True]) + 1).dtype is torch.int64
    assert (torch.tensor([1.0], dtype=torch.float16) + 2.5).dtype is torch.float16
    assert (i / 2).tolist() == [0.5, 1.0, 1.5]
    assert (torch.tensor([1, 2], dtype=torch.int32) + torch.tensor(2.0, dtype=torch.float64)).dtype \
        is torch.float64
    assert (np.float32(2.0) * torch.tensor([1.5])).tolist() == [3.0]


# -- unary math ---------------------------------------------------------------------------------
UNARY = [
    ("neg", np.negative, (-3, 3)), ("abs", np.abs, (-3, 3)), ("exp", np.exp, (-3, 3)),
    ("log", np.log, (0.1, 3)), ("sqrt", np.sqrt, (0.1, 3)), ("sin", np.sin, (-3, 3)),
    ("cos", np.cos, (-3, 3)), ("tan", np.tan, (-1.2, 1.2)), ("tanh", np.tanh, (-3, 3)),
    ("sigmoid", lambda a: 1 / (1 + np.exp(-a)), (-30, 30)),
    ("erf", np.vectorize(math.erf), (-3, 3)), ("log1p", np.log1p, (-0.9, 3)),
    ("expm1", np.expm1, (-3, 3)), ("sinh", np.sinh, (-3, 3)), ("cosh", np.cosh, (-3, 3)),
    ("asin", np.arcsin, (-0.9, 0.9)), ("acos", np.arccos, (-0.9, 0.9)), ("atan", np.arctan, (-3, 3)),
    ("reciprocal", np.reciprocal, (0.5, 3)), ("rsqrt", lambda a: 1 / np.sqrt(a), (0.5, 3)),
    ("square", np.square, (-3, 3)), ("log2", np.log2, (0.1, 3)), ("log10", np.log10, (0.1, 3)),
    ("exp2", np.exp2, (-3, 3)), ("floor", np.floor, (-3, 3)), ("ceil", np.ceil, (-3, 3)),
    ("trunc", np.trunc, (-3, 3)), ("round", np.round, (-3, 3)), ("sign", np.sign, (-3, 3)),
    ("frac", lambda a: a - np.trunc(a), (-3, 3)), ("relu", lambda a: np.maximum(a, 0), (-3, 3)),
]


@pytest.mark.parametrize("name,ref,rng", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unary_values(name, ref, rng, dtype):
    x = randt(3, 4, low=rng[0], high=rng[1], dtype=dtype)
    out = getattr(torch, name)(x)
    assert out.dtype is dtype
    tol = 1e-6 if dtype is torch.float32 else 1e-12
    np.testing.assert_allclose(f64(out), ref(f64(x)), rtol=tol, atol=tol)
    # method form, 0-d and empty
    np.testing.assert_allclose(f64(getattr(x[0, 0] if hasattr(torch.Tensor, "__getitem__") else x, name)()),
                               ref(f64(x[0, 0] if hasattr(torch.Tensor, "__getitem__") else x)), rtol=tol)
    assert tuple(getattr(torch, name)(torch.zeros(0, 3, dtype=dtype)).shape) == (0, 3)


def test_round_half_to_even_and_edge_values():
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, float("inf"), float("nan")])
    r = torch.round(x)
    assert r.tolist()[:5] == [0.0, 2.0, 2.0, -0.0, -2.0]
    assert math.isinf(r.tolist()[5]) and math.isnan(r.tolist()[6])
    assert torch.sigmoid(torch.tensor([-1000.0, 1000.0])).tolist() == [0.0, 1.0]


def test_float_functions_promote_integers():
    i = torch.tensor([1, 4, 9])
    assert torch.sqrt(i).dtype is torch.float32
    assert torch.sqrt(i).tolist() == [1.0, 2.0, 3.0]
    assert torch.abs(torch.tensor([-2, 3])).dtype is torch.int64


# -- integer arithmetic -------------------------------------------------------------------------
def test_integer_division_semantics():
    a = torch.tensor([7, -7, 7, -7])
    b = torch.tensor([2, 2, -2, -2])
    assert torch.floor_divide(a, b).tolist() == [3, -4, -4, 3]
    assert torch.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert torch.div(a, b, rounding_mode="floor").tolist() == [3, -4, -4, 3]
    assert torch.remainder(a, b).tolist() == [1, 1, -1, -1]
    assert torch.fmod(a, b).tolist() == [1, -1, 1, -1]
    assert (a % 3).tolist() == [1, 2, 1, 2]
    assert (a // 2).tolist() == [3, -4, 3, -4]
    with pytest.raises(RuntimeError, match="division by zero"):
        a // torch.tensor([0, 1, 1, 1])
    with pytest.raises(ValueError, match="rounding_mode"):
        torch.div(a, b, rounding_mode="up")


def test_pow_rules():
    assert (torch.tensor([2, 3]) ** 2).tolist() == [4, 9]
    assert (2 ** torch.tensor([1.0, 3.0])).tolist() == [2.0, 8.0]
    with pytest.raises(RuntimeError, match="negative integer powers"):
        torch.tensor([2, 3]) ** -1
    assert (torch.tensor([2, 3]) ** 0.5).dtype is torch.float32


def test_bitwise_ops():
    a = torch.tensor([12, 10], dtype=torch.int32)
    b = torch.tensor([10, 6], dtype=torch.int32)
    assert (a & b).tolist() == [8, 2]
    assert (a | b).tolist() == [14, 14]
    assert (a ^ b).tolist() == [6, 12]
    assert (a << 1).tolist() == [24, 20]
    assert (a >> 2).tolist() == [3, 2]
    assert (~a).tolist() == [-13, -11]
    m = torch.tensor([True, False])
    assert (m & torch.tensor([True, True])).tolist() == [True, False]
    assert (~m).tolist() == [False, True]
    assert (a & b).dtype is torch.int32
    with pytest.raises(RuntimeError, match="integer and bool"):
        torch.tensor([1.0]) & torch.tensor([1.0])
    with pytest.raises(RuntimeError, match="bool tensors is not supported"):
        m - m


def test_comparisons_and_logical():
    a = torch.tensor([1.0, 2.0, float("nan")])
    b = torch.tensor([1.0, 3.0, float("nan")])
    assert (a == b).tolist() == [True, False, False]
    assert (a != b).tolist() == [False, True, True]
    assert (a <= b).tolist() == [True, True, False]
    assert torch.logical_and(a > 0, b > 2).tolist() == [False, True, False]
    assert torch.logical_xor(torch.tensor([1, 0]), torch.tensor([1, 1])).tolist() == [False, True]
    assert torch.equal(torch.tensor([1, 2]), torch.tensor([1, 2]))
    assert not torch.equal(torch.tensor([1, 2]), torch.tensor([1, 2, 3]))


def test_clamp_and_where():
    x = torch.tensor([-2.0, 0.5, 3.0])
    assert torch.clamp(x, -1, 1).tolist() == [-1.0, 0.5, 1.0]
    assert x.clamp(min=0).tolist() == [0.0, 0.5, 3.0]
    assert x.clamp(max=torch.tensor([0.0, 0.0, 5.0])).tolist() == [-2.0, 0.0, 3.0]
    with pytest.raises(RuntimeError, match="At least one"):
        torch.clamp(x)
    assert torch.where(x > 0, x, torch.zeros(3)).tolist() == [0.0, 0.5, 3.0]
    assert torch.where(x > 0, 1.0, 0.0).tolist() == [0.0, 1.0, 1.0]
    c = torch.where(torch.tensor([[True], [False]]), torch.tensor([1, 2, 3]), torch.tensor(0))
    assert c.tolist() == [[1, 2, 3], [0, 0, 0]]
    with pytest.raises(RuntimeError, match="boolean"):
        torch.where(torch.tensor([1.0]), x, x)


def test_out_argument():
    out = torch.zeros(3)
    torch.add(torch.ones(3), 2, out=out)
    assert out.tolist() == [3.0, 3.0, 3.0]


# -- gradients ----------------------------------------------------------------------------------
BINARY_GRAD = ["add", "sub", "mul", "div", "pow", "atan2", "maximum", "minimum", "remainder", "fmod"]


@pytest.mark.parametrize("name", BINARY_GRAD)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 1), (4,)), ((), (2, 2)), ("noncontig", None)],
                         ids=["same", "broadcast", "zero-d", "noncontig"])
def test_binary_gradients(name, shapes):
    if shapes[0] == "noncontig":
        a = randt(4, 3, low=0.5, high=2, seed=1).permute(1, 0).detach().requires_grad_()
        b = randt(3, 4, low=0.5, high=2, seed=2, requires_grad=True)
    else:
        a = randt(*shapes[0], low=0.5, high=2, seed=1, requires_grad=True)
        b = randt(*shapes[1], low=0.5, high=2, seed=2, requires_grad=True)
    fn = getattr(torch, name)
    assert gradcheck(fn, (a, b))
    assert gradgradcheck(fn, (a, b))


@pytest.mark.parametrize("scalar", [2.0, 3, -1.5])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_binary_gradients_with_scalars(name, scalar):
    a = randt(3, low=0.5, high=2, requires_grad=True)
    fn = getattr(torch, name)
    assert gradcheck(lambda t: fn(t, scalar), (a,))
    assert gradgradcheck(lambda t: fn(t, scalar), (a,))
    if name != "pow" or scalar > 0:
        assert gradcheck(lambda t: fn(scalar, t), (a,))
        assert gradgradcheck(lambda t: fn(scalar, t), (a,))


@pytest.mark.parametrize("name,ref,rng", [u for u in UNARY if u[0] not in
                                          ("floor", "ceil", "trunc", "round", "sign", "frac", "relu")],
                         ids=[u[0] for u in UNARY if u[0] not in
                              ("floor", "ceil", "trunc", "round", "sign", "frac", "relu")])
def test_unary_gradients(name, ref, rng):
    lo, hi = rng
    if name == "abs":
        lo, hi = 0.2, 2      # away from the kink
    x = randt(2, 3, low=max(lo, -3), high=min(hi, 3), seed=3, requires_grad=True)
    fn = getattr(torch, name)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_piecewise_constant_ops_have_zero_gradient():
    x = randt(5, requires_grad=True)
    for name in ("floor", "ceil", "trunc", "round", "sign"):
        (g,) = torch.autograd.grad(getattr(torch, name)(x).sum(), x)
        assert f64(g).tolist() == [0.0] * 5


def test_clamp_where_relu_gradients():
    x = torch.tensor([-2.0, -0.5, 0.3, 1.7], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: torch.clamp(t, -1, 1), (x,))
    assert gradgradcheck(lambda t: torch.clamp(t, -1, 1) * t, (x,))
    y = randt(4, seed=5, requires_grad=True)
    cond = torch.tensor([True, False, True, False])
    assert gradcheck(lambda a, b: torch.where(cond, a, b), (x, y))
    assert gradgradcheck(lambda a, b: torch.where(cond, a * b, b), (x, y))
    assert gradcheck(torch.relu, (x,))
    b = randt(1, seed=6, requires_grad=True)
    assert gradcheck(lambda a, b: torch.where(cond, a, b), (x, b))   # broadcast operand


def test_relu_gradient_at_nan_and_zero_is_pytorchs():
    """PyTorch's threshold_backward: grad where not (y <= 0): passes at NaN, stops at 0 and below."""
    x = torch.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
    torch.relu(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]


def test_mixed_precision_gradient_keeps_input_dtype():
    a = torch.ones(3, dtype=torch.float16, requires_grad=True)
    b = torch.ones(3, dtype=torch.float32, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype is torch.float16 and b.grad.dtype is torch.float32


def test_inplace_on_nonleaf_records():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.add_(1)
    y.mul_(x)
    y.sum().backward()       # y = (2x + 1) * x -> dy/dx = 4x + 1
    assert x.grad.tolist() == [5.0, 9.0]
    z = torch.tensor([1.0, 2.0], requires_grad=True) * 1
    z.exp_()
    assert z.grad_fn.name() == "ExpBackward0"


def test_inplace_errors():
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.add_(1)
    with torch.no_grad():
        leaf.add_(1)
    assert leaf.tolist() == [2.0, 2.0]
    x = torch.ones(2, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_devices_must_match_message():
    a = torch.ones(2)
    assert "cpu" in str(a.device)


_IEEE_SILENT = """
import math
import numpy as np
import tensorplug as torch
x = torch.tensor([float("inf"), 0.0])
assert math.isnan((x - x).tolist()[0])
assert torch.log(torch.tensor([0.0])).tolist() == [float("-inf")]
assert (torch.tensor([1.0]) / 0).tolist() == [float("inf")]
assert (torch.tensor([1.0], dtype=torch.float16) * 1e5).tolist() == [float("inf")]
assert torch.full((10,), 60000.0, dtype=torch.float16).sum().item() == float("inf")
assert torch.cumprod(torch.tensor([1e30, 1e30]), 0).tolist()[1] == float("inf")
try:
    np.log(np.zeros(1))
except RuntimeWarning:
    print("the user's own NumPy calls still warn")
"""


def test_ieee_special_results_are_silent():
    """inf - inf, log(0), overflow give IEEE results without NumPy's RuntimeWarnings (PyTorch is silent),
    even under -W error; the filter is scoped to the backend, so NumPy calls of the user's still warn.
    (A fresh interpreter: pytest resets warning filters around every test.)"""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", _IEEE_SILENT], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "the user's own NumPy calls still warn"


@pytest.mark.parametrize("e", [2, 3, 3.0, 0.5, -0.5, -1, -2.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_scalar_exponents_computed_by_products(e, dtype):
    """x ** e for the exponents computed without pow() (x*x*x, sqrt, 1/sqrt, ...: PyTorch's fast paths)
    against float64 pow; the special values as PyTorch 2.13 gives them (sqrt(-0.) = -0., rsqrt(-0.) = -inf)."""
    x = np.random.default_rng(1).uniform(0.1, 4.0, 1000) * np.where(np.arange(1000) % 2, 1, -1)
    if e in (0.5, -0.5):
        x = np.abs(x)
    got = (torch.tensor(x, dtype=getattr(torch, dtype)) ** e).numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, np.power(x, float(e)), rtol=4e-7 if dtype == "float32" else 1e-15)
    special = torch.tensor([-2.0, -0.0, 0.0, float("nan"), float("inf")], dtype=getattr(torch, dtype))
    want = {2: [4.0, 0.0, 0.0, math.nan, math.inf], 3: [-8.0, -0.0, 0.0, math.nan, math.inf],
            0.5: [math.nan, -0.0, 0.0, math.nan, math.inf], -0.5: [math.nan, -math.inf, math.inf, math.nan, 0.0],
            -1: [-0.5, -math.inf, math.inf, math.nan, 0.0], -2: [0.25, math.inf, math.inf, math.nan, 0.0]}[e]
    r = (special ** e).numpy()
    np.testing.assert_array_equal(r, np.array(want, dtype))
    finite = ~np.isnan(r)                # (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(r[finite]), np.signbit(np.array(want)[finite]))


def test_pow_in_place_by_products_reads_the_original_values():
    """pow_(3) writes into its input: the product must not read values it has already overwritten."""
    x = torch.tensor([1.0, 2.0, -3.0])
    x.pow_(3)
    np.testing.assert_array_equal(x.numpy(), np.array([1.0, 8.0, -27.0], np.float32))
    y = torch.tensor([4.0, 9.0], dtype=torch.float64, requires_grad=True)
    (y ** -0.5).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), -0.5 * np.array([4.0, 9.0]) ** -1.5, rtol=1e-15)
