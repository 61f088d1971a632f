"""tensorplug.bfloat16 on the NumPy backend, against PyTorch 2.13's behaviour.

Expected values are computed here with NumPy in float32 / float64 and rounded to bfloat16 with
ml_dtypes (round to nearest even), the way PyTorch's CPU kernels compute bfloat16; the literals were
read from PyTorch 2.13 (CPU) for the same inputs. No expected value comes from tensorplug itself.
"""
import io
import math
import pickle
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F

bf = torch.bfloat16
BF = ml_dtypes.bfloat16


def r32(a):
    """float32 values rounded to bfloat16, as float64 (what a PyTorch kernel computing in float32 gives)."""
    return np.asarray(a, dtype=np.float32).astype(BF).astype(np.float64)


def r64(a):
    """Exact (float64) values rounded to float32, then to bfloat16."""
    return r32(np.asarray(a, dtype=np.float64).astype(np.float32))


def got(t):
    assert t.dtype is bf
    return np.asarray(t.float().numpy(), dtype=np.float64)


def bits(t):
    """The 16-bit patterns of a bfloat16 tensor (via its float32 values, which hold them exactly)."""
    return (t.float().numpy().view(np.uint32) >> 16).astype(np.uint16)


def same(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@pytest.fixture
def xy():
    """Two (8, 64) bfloat16 inputs and their float64 values."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((8, 64)) * 3).astype(np.float32).astype(BF)
    y = rng.standard_normal((8, 64)).astype(np.float32).astype(BF)
    return (torch.from_numpy(x), torch.from_numpy(y), x.astype(np.float64), y.astype(np.float64))


# -- the dtype object -------------------------------------------------------------------------------
def test_dtype_object():
    """bfloat16 is a 2-byte signed floating dtype named like PyTorch's, one object however it is named."""
    assert isinstance(bf, torch.dtype) and repr(bf) == "tensorplug.bfloat16" and bf.itemsize == 2
    assert bf.is_floating_point and not bf.is_complex and bf.is_signed
    assert torch.dtypes.bfloat16 is bf and torch.dtypes.as_dtype("bfloat16") is bf
    assert torch.dtypes.as_dtype(np.dtype(BF)) is bf and torch.dtypes.as_dtype(BF) is bf
    assert pickle.loads(pickle.dumps(bf)) is bf
    assert torch.tensor([1.0]).bfloat16().dtype is bf and torch.ones(2, dtype=bf).is_floating_point()
    assert torch.ones(2, dtype=bf).element_size() == 2


def test_legacy_type_names():
    """type() names BFloat16Tensor; type('torch.BFloat16Tensor') and BFloat16Tensor(...) make bfloat16."""
    assert torch.ones(2, dtype=bf).type() == "tensorplug.BFloat16Tensor"
    assert torch.ones(2).type("torch.BFloat16Tensor").dtype is bf
    assert torch.ones(2).type(bf).dtype is bf
    t = torch.BFloat16Tensor([1.5, 2.25])
    assert t.dtype is bf and t.tolist() == [1.5, 2.25] and isinstance(t, torch.BFloat16Tensor)
    assert not isinstance(torch.ones(2), torch.BFloat16Tensor)


NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
         "complex128", "bfloat16"]
# torch.promote_types(bfloat16, column) in PyTorch 2.13
PROMOTED = ["bfloat16"] * 6 + ["float32", "float32", "float64", "complex64", "complex128", "bfloat16"]


@pytest.mark.parametrize("name,expected", list(zip(NAMES, PROMOTED)))
def test_promote_types_with_every_dtype(name, expected):
    """float16 and bfloat16 promote to float32 (neither holds the other); integers and bool to bfloat16."""
    other = getattr(torch, name)
    assert torch.promote_types(bf, other) is getattr(torch, expected)
    assert torch.promote_types(other, bf) is getattr(torch, expected)


def test_result_type_with_scalars_and_0d_tensors():
    """A dimensioned bfloat16 tensor wins over 0-d tensors and scalars of its category; a float 0-d
    tensor or scalar makes an integer tensor bfloat16 only when it is bfloat16 itself."""
    v = torch.ones(3, dtype=bf)
    assert (v + 1.5).dtype is bf and (v + 1).dtype is bf and (v + True).dtype is bf
    assert (v + torch.tensor(1.0, dtype=torch.float64)).dtype is bf
    assert (v + torch.tensor(1.0, dtype=torch.float16)).dtype is bf
    assert (torch.tensor(1.0, dtype=bf) + torch.ones(3, dtype=torch.float16)).dtype is torch.float16
    assert (torch.ones(3, dtype=torch.int32) + torch.tensor(1.5, dtype=bf)).dtype is bf
    assert (v + torch.ones(3, dtype=torch.float16)).dtype is torch.float32
    assert (v * torch.ones(3)).dtype is torch.float32 and (v + torch.ones(3, dtype=torch.int64)).dtype is bf
    assert torch.result_type(v, 2.5) is bf and (v + 1j).dtype is torch.complex64


def test_finfo():
    """torch.finfo(torch.bfloat16): 8 significant bits, float32's exponent range."""
    f = torch.finfo(bf)
    assert f.bits == 16 and f.dtype == "bfloat16" and f.resolution == 0.01
    assert f.eps == 2.0 ** -7 and f.max == (2 - 2.0 ** -7) * 2.0 ** 127 and f.min == -f.max
    assert f.tiny == f.smallest_normal == 2.0 ** -126
    assert repr(f) == ("finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, eps=0.0078125, "
                       "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=bfloat16)")


# -- creation and conversion -----------------------------------------------------------------------
def test_creation():
    """zeros / ones / full / empty / eye / tensor / arange / linspace make bfloat16 with rounded values."""
    assert torch.zeros(2, 3, dtype=bf).tolist() == [[0.0] * 3] * 2 and torch.ones(2, dtype=bf).tolist() == [1, 1]
    assert torch.empty(4, dtype=bf).dtype is bf and torch.eye(2, dtype=bf).tolist() == [[1, 0], [0, 1]]
    assert torch.full((2,), 3.3, dtype=bf).tolist() == [3.296875] * 2
    assert torch.tensor([1.0, 2.5, 3.14159, 1e-3, 100.7], dtype=bf).tolist() == \
        r32([1.0, 2.5, 3.14159, 1e-3, 100.7]).tolist() == [1.0, 2.5, 3.140625, 0.00099945068359375, 100.5]
    assert torch.arange(5, dtype=bf).tolist() == [0, 1, 2, 3, 4]
    assert torch.arange(0, 1, 0.1, dtype=bf).tolist() == r64(np.arange(10) * 0.1).tolist() == \
        [0.0, 0.10009765625, 0.2001953125, 0.30078125, 0.400390625, 0.5, 0.6015625, 0.69921875, 0.80078125,
         0.8984375]
    assert torch.linspace(0, 1, 5, dtype=bf).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert torch.zeros_like(torch.ones(2), dtype=bf).dtype is bf and torch.ones(2, dtype=bf).new_zeros(3).dtype is bf


def test_creation_rounds_through_float32_as_pytorch():
    """A float64 or int64 value becomes float32 first, then bfloat16 (two roundings, as PyTorch):
    1 + 2**-8 + 2**-30 gives 1.0 (not 1.0078125) and 2**24 + 2**16 + 1 gives 2**24."""
    v = 1 + 2.0 ** -8 + 2.0 ** -30
    assert float(np.float64(v).astype(BF)) == 1.0078125           # (the direct rounding, not PyTorch's)
    assert torch.tensor([v], dtype=bf).item() == 1.0 and torch.full((1,), v, dtype=bf).item() == 1.0
    assert torch.tensor([v], dtype=torch.float64).to(bf).item() == 1.0
    assert torch.tensor(np.array([v]), dtype=bf).item() == 1.0
    n = 2 ** 24 + 2 ** 16 + 1
    assert torch.tensor([n]).to(bf).item() == 2.0 ** 24 and torch.tensor([n], dtype=bf).item() == 2.0 ** 24


def test_random_creation():
    """randn / rand / randint / normal_ in bfloat16: bfloat16 values, rand in [0, 1), seeded repeatably."""
    torch.manual_seed(0)
    a = torch.randn(1000, dtype=bf)
    torch.manual_seed(0)
    assert same(got(torch.randn(1000, dtype=bf)), got(a))
    v = got(a)
    assert abs(v.mean()) < 0.15 and 0.85 < v.std() < 1.15
    u = got(torch.rand(5000, dtype=bf))
    assert u.min() >= 0 and u.max() < 1 and 0.45 < u.mean() < 0.55
    assert same(r32(u), u) and got(torch.randint(0, 7, (50,), dtype=bf)).max() <= 6
    assert torch.empty(3, dtype=bf).normal_().dtype is bf and torch.empty(3, dtype=bf).uniform_().dtype is bf


def test_casts_both_ways():
    """to / bfloat16() / float() / half() / int() / bool() convert as PyTorch does."""
    t = torch.tensor([0.1, -2.75, 2.75, 300.0], dtype=torch.float64).bfloat16()
    assert t.dtype is bf and t.tolist() == r64([0.1, -2.75, 2.75, 300.0]).tolist()
    assert t.float().dtype is torch.float32 and t.float().tolist() == t.tolist() and t.double().tolist() == t.tolist()
    assert t.int().tolist() == [0, -2, 2, 300] and t.to(torch.uint8).tolist() == [0, 254, 2, 44]
    assert torch.tensor([0.0, -0.0, 0.5, math.nan], dtype=bf).bool().tolist() == [False, False, True, True]
    assert torch.tensor([1e5], dtype=bf).half().item() == math.inf
    assert torch.tensor([65504.0], dtype=torch.float16).bfloat16().item() == 65536.0
    assert torch.ones(2, dtype=bf).to(bf).dtype is bf and torch.ones(2, dtype=torch.int64).to(bf).dtype is bf


def test_numpy_refuses_bfloat16_as_pytorch():
    """.numpy() and NumPy's conversion raise TypeError (NumPy has no bfloat16), as PyTorch."""
    t = torch.ones(2, dtype=bf)
    for fn in (t.numpy, lambda: t.numpy(force=True), lambda: np.asarray(t)):
        with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
            fn()
    assert t.float().numpy().dtype == np.float32


def test_item_tolist():
    """.item() and .tolist() give Python floats holding the bfloat16 values."""
    t = torch.tensor([2.3, -0.1], dtype=bf)
    assert t[0].item() == 2.296875 and type(t[0].item()) is float
    assert t.tolist() == [2.296875, -0.10009765625] and all(type(v) is float for v in t.tolist())
    assert torch.from_numpy(np.array([1.5, 2.0], dtype=BF)).tolist() == [1.5, 2.0]


def test_printing():
    """str / repr as PyTorch prints bfloat16 (values formatted from float32, dtype shown)."""
    assert str(torch.tensor([1.0, 2.5, 3.14159, 1e-3, 100.7], dtype=bf)) == \
        "tensor([1.0000e+00, 2.5000e+00, 3.1406e+00, 9.9945e-04, 1.0050e+02],\n       dtype=tensorplug.bfloat16)"
    assert repr(torch.full((2,), 3.3, dtype=bf)) == "tensor([3.2969, 3.2969], dtype=tensorplug.bfloat16)"
    assert repr(torch.tensor(2.0, dtype=bf)) == "tensor(2., dtype=tensorplug.bfloat16)"
    assert repr(torch.tensor([math.inf, -math.inf, math.nan, 1.0], dtype=bf)) == \
        "tensor([inf, -inf, nan, 1.], dtype=tensorplug.bfloat16)"
    assert repr(torch.zeros(2, 0, dtype=bf)) == "tensor([], size=(2, 0), dtype=tensorplug.bfloat16)"
    assert repr(torch.tensor([[1.5, 2], [3, 4]], dtype=bf, requires_grad=True)) == \
        "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]], dtype=tensorplug.bfloat16, requires_grad=True)"
    assert repr(torch.arange(0, 1, 0.1, dtype=bf)) == \
        ("tensor([0.0000, 0.1001, 0.2002, 0.3008, 0.4004, 0.5000, 0.6016, 0.6992, 0.8008,\n"
         "        0.8984], dtype=tensorplug.bfloat16)")
    torch.set_default_dtype(bf)
    try:
        assert torch.tensor([1.5, 2]).dtype is bf and repr(torch.tensor([1.5, 2])) == "tensor([1.5000, 2.0000])"
    finally:
        torch.set_default_dtype(torch.float32)


# -- arithmetic and math, bit for bit ------------------------------------------------------------------
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_bit_for_bit(xy, name):
    """add / sub / mul / div: float32 result rounded once."""
    x, y, xf, yf = xy
    out = getattr(torch, name)(x, y)
    assert same(got(out), r32(BINARY[name](xf.astype(np.float32), yf.astype(np.float32))))


def test_python_scalar_operands(xy):
    """A Python scalar is rounded to bfloat16 first for add / sub (PyTorch: x + 2.3 adds 2.296875), but
    stays a float32 for mul and div; s / x is reciprocal(x) * s, as torch's __rdiv__."""
    x, _, xf, _ = xy
    x32 = xf.astype(np.float32)
    s23, s01, s03 = (np.float32(v) for v in (2.3, 0.1, 0.3))
    assert same(got(x + 2.3), r32(x32 + np.float32(r32(2.3))))
    assert same(got(2.3 - x), r32(np.float32(r32(2.3)) - x32))
    assert same(got(x * 0.1), r32(x32 * s01)) and same(got(0.1 * x), r32(x32 * s01))
    assert same(got(x / 0.3), r32(x32 / s03))
    assert same(got(0.3 / x), r32(np.float32(r32(np.float32(1) / x32)) * s03))
    assert not same(r32(x32 * s01), r32(x32 * np.float32(r32(0.1))))      # (the two rules do differ here)
    t = torch.tensor([1.0, 3.0, 7.0], dtype=bf)                             # literals from PyTorch
    assert (t * 0.1).tolist() == [0.10009765625, 0.30078125, 0.69921875]
    assert (t / 0.3).tolist() == [3.328125, 10.0, 23.375] and (0.3 / t).tolist() == [0.30078125, 0.10009765625,
                                                                                      0.042724609375]
    assert (t + 0.1).tolist() == [1.1015625, 3.09375, 7.09375] and (torch.ones(1, dtype=bf) * 1000001).item() == 999424


def test_add_with_alpha(xy):
    """add(x, y, alpha): alpha in bfloat16, x + alpha * y in float32, one rounding (PyTorch's vectorized
    kernel; checked on these 32 values)."""
    x, y, xf, yf = xy
    x, y, xf, yf = x[0, :32], y[0, :32], xf[0, :32], yf[0, :32]
    a = np.float32(r32(0.3))
    assert same(got(torch.add(x, y, alpha=0.3)), r32(xf.astype(np.float32) + a * yf.astype(np.float32)))
    assert same(got(torch.sub(x, y, alpha=0.3)), r32(xf.astype(np.float32) - a * yf.astype(np.float32)))


UNARY = {"exp": (np.exp, lambda v: v), "log": (np.log, np.abs), "tanh": (np.tanh, lambda v: v),
         "sin": (np.sin, lambda v: v), "sqrt": (np.sqrt, np.abs),
         "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), lambda v: v),
         "rsqrt": (lambda v: 1 / np.sqrt(v), np.abs), "log2": (np.log2, np.abs), "expm1": (np.expm1, lambda v: v),
         "erf": (np.vectorize(math.erf), lambda v: v)}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_math_bit_for_bit(xy, name):
    """exp / log / tanh / sigmoid / rsqrt / ...: the exact value rounded to float32, then to bfloat16 (one
    rounding of the float32 result, as PyTorch's kernels; rsqrt and log2 are not 1 / sqrt, log / log 2)."""
    x, _, xf, _ = xy
    fn, prep = UNARY[name]
    arg = torch.from_numpy(prep(xf).astype(np.float32).astype(BF))
    assert same(got(getattr(torch, name)(arg)), r64(fn(prep(xf))))


def test_exp_rounds_the_correct_float32_value():
    """exp(6.84375) is 938.00005: bfloat16 940 (PyTorch's value); NumPy's float32 exp gives 938.0, which
    would round to 936."""
    assert torch.tensor([6.84375], dtype=bf).exp().item() == 940.0 == r64(math.exp(6.84375))


def _gelu64(v):
    return 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))


def test_activations_in_float32(xy):
    """gelu / silu / softplus / elu / mish / hardswish compute in float32 and round once, as PyTorch."""
    x, _, xf, _ = xy
    core = np.abs(xf) < 4        # (PyTorch's float32 erf differs in gelu's far negative tail)
    assert same(got(F.gelu(x))[core], r64(_gelu64(xf))[core])
    assert same(got(F.silu(x)), r64(xf / (1 + np.exp(-xf))))
    assert same(got(F.softplus(x)), r64(np.log1p(np.exp(xf))))
    assert same(got(F.elu(x)), r64(np.where(xf > 0, xf, np.expm1(np.minimum(xf, 0)))))
    assert same(got(F.mish(x)), r64(xf * np.tanh(np.log1p(np.exp(xf)))))
    assert same(got(F.hardswish(x)), r64(xf * np.clip(xf + 3, 0, 6) / 6))
    m = torch.tensor([[0.5, -1.25, 2.0, 3.5], [1.0, 0.0, -0.75, 0.25]], dtype=bf)     # literals from PyTorch
    assert F.gelu(m).tolist() == [[0.345703125, -0.1318359375, 1.953125, 3.5], [0.83984375, 0.0, -0.169921875,
                                                                                 0.1494140625]]
    assert m.sigmoid().tolist() == [[0.62109375, 0.22265625, 0.87890625, 0.96875], [0.73046875, 0.5, 0.3203125,
                                                                                     0.5625]]


# -- matmul, reductions, softmax, normalization -----------------------------------------------------
def test_matmul_and_linear(xy):
    """matmul: float32 products and sums, one rounding; linear adds the bias before rounding (addmm)."""
    x, y, xf, yf = xy
    a, b = x[:, :16], y[:, :24].t()[:16]
    af, bf_ = xf[:, :16], yf[:, :24].T[:16]
    assert same(got(a @ b), r64(af @ bf_))
    w, bias = y[:5], y[6, :5]
    assert same(got(F.linear(x, w, bias)), r64(xf @ yf[:5].T + yf[6, :5]))
    m = torch.tensor([[0.5, -1.25, 2.0, 3.5], [1.0, 0.0, -0.75, 0.25]], dtype=bf)
    assert (m @ m.t()).tolist() == [[18.0, -0.125], [-0.125, 1.625]]
    assert F.linear(m, m, torch.tensor([0.1, -0.3], dtype=bf)).tolist() == [[18.125, -0.42578125],
                                                                           [-0.02490234375, 1.328125]]


def test_sum_and_cumsum_accumulate_in_float32(xy):
    """sum and cumsum accumulate in float32 (1000 ones sum to 1000; bfloat16 partial sums would stop at
    256) and round each result once."""
    x, _, xf, _ = xy
    assert torch.ones(1000, dtype=bf).sum().item() == 1000.0
    assert torch.ones(300, dtype=bf).cumsum(0)[-1].item() == 300.0
    assert same(got(x.sum()), r64(xf.sum())) and same(got(x.sum(1)), r64(xf.sum(1)))
    assert same(got(x.sum(0)), r64(xf.sum(0))) and same(got(x.cumsum(1)), r64(np.cumsum(xf, 1)))


def test_mean_var_std(xy):
    """mean / var / std in float32, rounded once: mean([1.9140625, 0.640625, 2.9375]) is 1.828125
    (rounding the sum to bfloat16 before dividing would give 1.8359375)."""
    x, _, xf, _ = xy
    assert torch.tensor([1.9140625, 0.640625, 2.9375], dtype=bf).mean().item() == 1.828125
    assert same(got(x.mean()), r64(xf.mean())) and same(got(x.mean(1)), r64(xf.mean(1)))
    assert same(got(x.var(1)), r64(xf.var(1, ddof=1))) and same(got(x.std(1)), r64(xf.std(1, ddof=1)))
    assert same(got(x.var(0, unbiased=False)), r64(xf.var(0)))
    assert same(got(x.logsumexp(1)), r32(xf.max(1) + r64(np.log(np.exp(xf - xf.max(1, keepdims=True)).sum(1)))))
    assert same(got(x.norm(dim=1)), r64(np.sqrt((xf * xf).sum(1))))
    vals, idx = x.max(1)
    assert same(got(vals), xf.max(1)) and idx.tolist() == xf.argmax(1).tolist()


def _softmax64(v, axis):
    e = np.exp(v - v.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def test_softmax_and_layer_norm(xy):
    """softmax and layer_norm (with weight and bias) in float32, one rounding, as PyTorch's kernels."""
    x, y, xf, yf = xy
    assert same(got(x.softmax(1)), r64(_softmax64(xf, 1))) and same(got(x.softmax(0)), r64(_softmax64(xf, 0)))
    w, b = y[0], y[1]
    mu, var = xf.mean(1, keepdims=True), xf.var(1, keepdims=True)
    norm = (xf - mu) / np.sqrt(var + 1e-5)
    assert same(got(F.layer_norm(x, (64,))), r64(norm))
    assert same(got(F.layer_norm(x, (64,), w, b)), r64(norm * yf[0] + yf[1]))
    assert same(got(F.rms_norm(x, (64,))), r64(xf / np.sqrt((xf * xf).mean(1, keepdims=True) + 2.0 ** -23)))
    m = torch.tensor([[0.5, -1.25, 2.0, 3.5], [1.0, 0.0, -0.75, 0.25]], dtype=bf)    # literals from PyTorch
    assert F.layer_norm(m, (4,)).tolist() == [[-0.390625, -1.3828125, 0.4609375, 1.3125],
                                              [1.3984375, -0.2001953125, -1.3984375, 0.2001953125]]
    assert m.softmax(-1).tolist() == [[0.038818359375, 0.006744384765625, 0.173828125, 0.78125],
                                      [0.49609375, 0.1826171875, 0.08642578125, 0.234375]]


def test_conv_and_pool(xy):
    """conv1d / avg_pool1d / max_pool1d on bfloat16 in float32, rounded once."""
    x, y, xf, yf = xy
    inp, w = x.reshape(8, 1, 64), y[0, :6].reshape(2, 1, 3)
    wf = yf[0, :6].reshape(2, 3)
    want = np.stack([np.stack([np.correlate(row, k, "valid") for k in wf]) for row in xf])
    assert same(got(F.conv1d(inp, w)), r64(want))
    assert same(got(F.avg_pool1d(inp, 4)), r64(xf.reshape(8, 1, 16, 4).mean(-1)))
    assert same(got(F.max_pool1d(inp, 4)), xf.reshape(8, 1, 16, 4).max(-1))


# -- autograd, modules, optimizers, serialization ----------------------------------------------------
def test_autograd_gives_bfloat16_gradients():
    """Gradients of bfloat16 leaves are bfloat16 (values from PyTorch for exp's; x * x's are exact)."""
    x = torch.tensor([0.5, -1.25, 2.0], dtype=bf, requires_grad=True)
    x.exp().sum().backward()
    assert x.grad.dtype is bf
    assert x.grad.tolist() == [1.6484375, 0.287109375, 7.375] == r64(np.exp([0.5, -1.25, 2.0])).tolist()
    x.grad = None
    (x * x).sum().backward()
    assert x.grad.tolist() == [1.0, -2.5, 4.0]
    x.grad = None
    F.layer_norm(x * 3, (3,)).pow(2).mul(torch.tensor([1.0, 2.0, 3.0], dtype=bf)).sum().backward()
    assert x.grad.dtype is bf and np.isfinite(got(x.grad)).all()


def test_autograd_chain_close_to_float64():
    """A linear + gelu + mean chain in bfloat16: the gradient is within bfloat16 error of the float64
    analytic gradient."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6)).astype(np.float32).astype(BF)
    wv = rng.standard_normal((3, 6)).astype(np.float32).astype(BF)
    x = torch.from_numpy(a).requires_grad_()
    F.gelu(x @ torch.from_numpy(wv).t()).mean().backward()
    af, wf = a.astype(np.float64), wv.astype(np.float64)
    z = af @ wf.T
    dgelu = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2))) + z * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    want = (dgelu / z.size) @ wf
    assert np.allclose(got(x.grad), want, rtol=3e-2, atol=2e-3)


def test_module_bfloat16_and_optimizer_step():
    """Module.bfloat16() / .to(bfloat16) convert floating parameters and buffers (not integer buffers);
    SGD and Adam steps update bfloat16 parameters (values from PyTorch)."""
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.GELU(), nn.Linear(4, 2)).bfloat16()
    assert all(p.dtype is bf for p in m.parameters())
    bn = m[1]
    assert bn.running_mean.dtype is bf and bn.running_var.dtype is bf and bn.num_batches_tracked.dtype is torch.int64
    assert nn.Linear(2, 2).to(bf).weight.dtype is bf and nn.Linear(2, 2).to(torch.bfloat16).bias.dtype is bf
    x = torch.randn(5, 3, dtype=bf)
    loss = m(x).pow(2).mean()
    assert loss.dtype is bf
    loss.backward()
    assert all(p.grad.dtype is bf for p in m.parameters())
    before = [p.detach().clone() for p in m.parameters()]
    torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9).step()
    assert any(not same(got(p.detach()), got(q)) for p, q in zip(m.parameters(), before))

    def step(opt_cls, **kw):
        p = nn.Parameter(torch.tensor([0.5, -1.25, 2.0], dtype=bf))
        p.grad = torch.tensor([0.1, 0.3, -0.7], dtype=bf)
        opt_cls([p], **kw).step()
        return p.tolist()
    assert step(torch.optim.SGD, lr=0.01) == [0.498046875, -1.25, 2.0]
    assert step(torch.optim.SGD, lr=0.01, momentum=0.9, weight_decay=0.01) == [0.498046875, -1.25, 2.0]
    assert step(torch.optim.Adam, lr=0.01) == [0.490234375, -1.2578125, 2.015625]


def test_save_load_round_trip_exactly(tmp_path):
    """tensorplug.save / load keep every bfloat16 bit (NaN, infinities, -0.0, subnormals), also in a
    state dict, through pickle and in the data-only format."""
    patterns = np.array([0x0000, 0x8000, 0x3F80, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x807F, 0x7F7F, 0x4049],
                        dtype=np.uint16)
    t = torch.from_numpy(patterns.view(BF).copy())
    m = nn.Linear(3, 2).bfloat16()
    path = tmp_path / "bf16.tpl"
    torch.save({"t": t, "m": m.state_dict(), "dt": bf}, path)
    back = torch.load(path)
    assert back["t"].dtype is bf and bits(back["t"]).tolist() == patterns.tolist() and back["dt"] is bf
    for k, v in m.state_dict().items():
        assert back["m"][k].dtype is bf and bits(back["m"][k]).tolist() == bits(v).tolist()
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    assert bits(torch.load(buf)).tolist() == patterns.tolist()
    assert bits(pickle.loads(pickle.dumps(t))).tolist() == patterns.tolist()
    from tensorplug.serialization import tpl_format           # tensorplug's own data-only format
    tpl = tmp_path / "bf16-data-only.tpl"
    tpl_format.save({"t": t}, tpl)
    assert bits(torch.load(tpl)["t"]).tolist() == patterns.tolist()


# -- errors --------------------------------------------------------------------------------------------
def test_unsupported_ops_raise_pytorchs_errors():
    """Low-precision linear algebra, cdist and complex() refuse bfloat16 with PyTorch's errors."""
    x = torch.ones(2, 2, dtype=bf)
    with pytest.raises(RuntimeError, match="linalg.inv: Low precision dtypes not supported. Got BFloat16"):
        torch.linalg.inv(x)
    with pytest.raises(NotImplementedError, match="\"cdist\" not implemented for 'BFloat16'"):
        torch.cdist(x, x)
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double tensors but got "
                                           "BFloat16 and BFloat16"):
        torch.complex(x, x)
    with pytest.raises(RuntimeError, match="result type bfloat16 can't be cast"):
        torch.add(x, x, out=torch.zeros(2, 2, dtype=torch.int64))


def test_a_backend_without_bfloat16_refuses_it(add_backend):
    """A backend whose `dtypes` lacks bfloat16 gets no bfloat16 tensor: creation and transfer raise
    TypeError naming the backend (no silent conversion)."""
    b = add_backend("nobf16", device_type="nobf16", indexed=False)
    b.dtypes = frozenset(d for d in b.dtypes if d != "bfloat16")
    msg = "bfloat16 is not supported on the 'nobf16' backend"
    for make in (lambda: torch.zeros(2, dtype=bf, device="nobf16"), lambda: torch.ones(2, device="nobf16").to(bf),
                 lambda: torch.ones(2, dtype=bf).to("nobf16"), lambda: torch.randn(2, dtype=bf, device="nobf16"),
                 lambda: torch.tensor([1.0], dtype=bf, device="nobf16"),
                 lambda: torch.arange(3, dtype=bf, device="nobf16")):
        with pytest.raises(TypeError, match=msg):
            make()
    assert torch.ones(2, device="nobf16").tolist() == [1.0, 1.0]
    from tensorplug.testing.conformance import build_checks
    assert not [c for c in build_checks(b) if c.dtype == "bfloat16"]
    from tensorplug.dispatch import registry
    assert [c for c in build_checks(registry.compute["numpy"]) if c.dtype == "bfloat16"]


def test_import_stays_light():
    """`import tensorplug` and float32 work do not import ml_dtypes; the first bfloat16 tensor does."""
    code = ("import sys, tensorplug as t; a = t.randn(3, 3); (a @ a).sum(); t.finfo(t.float16); "
            "print('ml_dtypes' in sys.modules, end=' '); t.zeros(1, dtype=t.bfloat16); "
            "print('ml_dtypes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
