"""Random shapes, dtypes, dims, indices and sizes fed to every op family: each failure is one of
PyTorch's documented exception types raised by tensorplug itself with its own message (the error's
origin is never a NumPy frame nor a backend's kernel), and each success matches NumPy (float64)."""
import math
import os
import traceback

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tensorplug as tp
import tensorplug.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore:Using a target size")    # (mse_loss warns, as PyTorch)
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
DOCUMENTED = (TypeError, ValueError, RuntimeError, IndexError, NotImplementedError)
CORE = os.path.dirname(tp.__file__) + os.sep
BACKENDS = os.path.join(CORE, "backends") + os.sep
DTYPES = [tp.float32, tp.float64, tp.float16, tp.int64, tp.int32, tp.int16, tp.int8, tp.uint8, tp.bool]
FLOATS = [tp.float32, tp.float64]


def outcome(fn):
    """fn()'s result, or None after checking the error it raised is tensorplug's own."""
    try:
        return fn()
    except DOCUMENTED as e:
        frames = traceback.extract_tb(e.__traceback__)
        origin = os.path.realpath(frames[-1].filename)
        assert origin.startswith(os.path.realpath(CORE)) and not origin.startswith(os.path.realpath(BACKENDS)), \
            f"{type(e).__name__}: {e} raised from {origin}:{frames[-1].lineno}"
        assert "numpy" not in str(e).lower() and "ndarray" not in str(e), f"NumPy's message leaked: {e}"
        assert str(e), f"{type(e).__name__} without a message"
        assert type(e).__module__ in ("builtins",) or type(e).__module__.startswith("tensorplug"), type(e)
        return None


def same(r, ref, rtol=1e-5, atol=1e-6):
    got = r.double().numpy() if r.dtype not in (tp.bool,) else r.numpy()
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(ref, np.float64), rtol=rtol, atol=atol,
                               equal_nan=True)


# -- strategies ------------------------------------------------------------------------------------------
dims = st.integers(-5, 5)
small_shape = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
any_size = st.one_of(st.integers(-3, 5), st.sampled_from([2 ** 40, 2 ** 62, -2 ** 40]))
any_shape = st.one_of(st.lists(any_size, max_size=4).map(tuple), st.just((1,) * 65), st.just((2 ** 31, 2 ** 31, 4)))
fill_values = st.one_of(st.integers(-300, 300), st.floats(allow_nan=True, allow_infinity=True, width=64),
                        st.sampled_from([1e40, 2 ** 63 - 1, -2 ** 63, 0.5, -0.5, 1j, 1 + 0j, True]))


@st.composite
def tensors(draw, dtypes=DTYPES, shape=small_shape):
    dt = draw(st.sampled_from(dtypes))
    sh = draw(shape)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    a = rng.integers(-3, 4, size=sh) if dt is not tp.bool else rng.integers(0, 2, size=sh)
    if dt is tp.uint8:
        a = np.abs(a)
    if dt.is_floating_point:
        a = a + rng.random(sh)
    return tp.tensor(a, dtype=dt)


def ref_of(x):
    return x.double().numpy() if x.dtype is not tp.bool else x.numpy().astype(np.float64)


def wrapped(v, dt):
    """What PyTorch stores for a Python number v written into dtype dt (when it accepts it)."""
    if dt is tp.bool:
        return bool(v)
    if not dt.is_floating_point:
        v = int(v.real if isinstance(v, complex) else v)
        bits = 8 * dt.itemsize
        return (v % (1 << bits)) if dt is tp.uint8 else v
    return np.asarray(v.real if isinstance(v, complex) else v).astype(np.dtype(str(dt).split(".")[-1])).item()


# -- creation --------------------------------------------------------------------------------------------
@SETTINGS
@given(any_shape, fill_values, st.sampled_from(DTYPES))
def test_creation_full(shape, value, dt):
    r = outcome(lambda: tp.full(shape, value, dtype=dt))
    if r is not None:
        assert tuple(r.shape) == shape and r.dtype is dt
        if r.numel():
            same(r, np.full(shape, float(wrapped(value, dt))))
    z = outcome(lambda: tp.zeros(*shape, dtype=dt))
    if z is not None:
        assert tuple(z.shape) == shape and not z.bool().any()


@SETTINGS
@given(st.integers(-3, 6), st.one_of(st.none(), st.integers(-3, 6)), st.sampled_from(DTYPES))
def test_creation_eye(n, m, dt):
    r = outcome(lambda: tp.eye(n, m, dtype=dt))
    if r is not None:
        same(r, np.eye(n, n if m is None else m))


@SETTINGS
@given(st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.sampled_from([math.nan, math.inf])),
       st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.sampled_from([2 ** 62, math.inf])),
       st.one_of(st.integers(-2, 2), st.floats(-2, 2), st.sampled_from([1e-30])))
def test_creation_arange(start, end, step):
    r = outcome(lambda: tp.arange(start, end, step, dtype=tp.float64))
    if r is not None:
        n = max(0, math.ceil((end - start) / step))
        same(r, start + step * np.arange(n))


@SETTINGS
@given(small_shape, st.one_of(st.floats(-1, 2), st.just(math.nan)))
def test_random_bernoulli(shape, p):
    probs = tp.full(shape, p, dtype=tp.float64)
    r = outcome(lambda: tp.bernoulli(probs))
    if r is None:
        assert probs.numel() and not 0 <= p <= 1
    else:
        assert (0 <= p <= 1 or not probs.numel()) and tuple(r.shape) == shape
        assert set(r.numpy().ravel().tolist()) <= {0.0, 1.0}
    s = outcome(lambda: tp.zeros(shape).bernoulli_(p))
    assert (s is not None) == (0 <= p <= 1)


# -- pointwise ------------------------------------------------------------------------------------------
UNARY = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "sqrt": np.sqrt, "floor": np.floor, "sign": np.sign,
         "sin": np.sin, "trunc": np.trunc, "relu": lambda a: np.maximum(a, 0), "square": np.square}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "lt": np.less,
          "eq": np.equal, "div": np.divide}


@SETTINGS
@given(tensors(), st.sampled_from(sorted(UNARY)))
def test_pointwise_unary(x, name):
    r = outcome(lambda: getattr(tp, name)(x))
    if r is not None:
        with np.errstate(all="ignore"):
            ref = UNARY[name](ref_of(x))
        if x.dtype is tp.uint8 and name == "neg":
            ref = np.mod(ref, 256)
        same(r, ref, rtol=1e-2 if x.dtype is tp.float16 else 1e-5, atol=1e-2 if x.dtype is tp.float16 else 1e-6)


@SETTINGS
@given(tensors(), tensors(), st.sampled_from(sorted(BINARY)), fill_values)
def test_pointwise_binary(x, y, name, scalar):
    r = outcome(lambda: getattr(tp, name)(x, y))
    if r is not None:
        with np.errstate(all="ignore"):
            ref = BINARY[name](ref_of(x).astype(np.float64), ref_of(y))
        if r.dtype is tp.bool:
            assert np.array_equal(r.numpy(), ref.astype(bool))
        elif r.dtype.is_floating_point:
            lo = r.dtype in (tp.float16, tp.float32)
            same(r, ref, rtol=1e-2 if lo else 1e-9, atol=1e-2 if lo else 1e-9)
        else:
            assert tuple(r.shape) == np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    outcome(lambda: x.clone().fill_(scalar))
    outcome(lambda: x.masked_fill(x != 0, scalar) if x.dtype is not tp.bool else x.masked_fill(x, scalar))


# -- reductions -----------------------------------------------------------------------------------------
@SETTINGS
@given(tensors(), dims, st.booleans(), st.sampled_from(["sum", "amax", "argmax", "mean", "prod", "cumsum"]))
def test_reductions(x, dim, keepdim, name):
    if name == "cumsum":
        r = outcome(lambda: tp.cumsum(x, dim))
        ref = (lambda a: np.cumsum(a, axis=dim if a.ndim else None).reshape(a.shape))
    else:
        r = outcome(lambda: getattr(tp, name)(x, dim, keepdim=keepdim))
        ref = (lambda a: getattr(np, {"amax": "max"}.get(name, name))(a, axis=dim, keepdims=keepdim)
               if a.ndim else a)
    if r is not None and r.numel():
        a = ref_of(x)
        if x.ndim and name != "argmax":
            same(r, ref(a), rtol=1e-2, atol=1e-2)
        elif name == "argmax" and x.ndim:
            assert np.array_equal(r.numpy(), np.argmax(a, axis=dim, keepdims=keepdim))


# -- movement / views -----------------------------------------------------------------------------------
@SETTINGS
@given(tensors(), st.lists(st.integers(-2, 6), max_size=5), dims, dims, st.integers(-3, 5))
def test_movement(x, shape, d0, d1, n):
    a = ref_of(x)
    r = outcome(lambda: x.reshape(shape))
    if r is not None:
        same(r, a.reshape([s if s != -1 else -1 for s in shape]))
    r = outcome(lambda: x.transpose(d0, d1))
    if r is not None:
        same(r, np.swapaxes(a, d0, d1) if a.ndim else a)
    r = outcome(lambda: x.unsqueeze(d0))
    if r is not None:
        same(r, np.expand_dims(a, d0))
    r = outcome(lambda: x.narrow(d0, d1, n))
    if r is not None:
        assert r.shape[d0 % x.ndim] == n
    r = outcome(lambda: x.expand(*shape))
    if r is not None:
        same(r, np.broadcast_to(a, [a.shape[i - len(shape) + a.ndim] if s == -1 else s for i, s in enumerate(shape)]))
    r = outcome(lambda: x.permute(*shape))
    if r is not None:
        same(r, np.transpose(a, shape))
    r = outcome(lambda: tp.cat([x, x], d0))
    if r is not None and a.shape != (0,):      # (PyTorch skips 1-d empty tensors whatever the dim)
        same(r, np.concatenate([a, a], d0))
    r = outcome(lambda: x.repeat(*shape))
    if r is not None:
        same(r, np.tile(a, shape))
    r = outcome(lambda: x.flip(d0))
    if r is not None:
        same(r, np.flip(a, d0) if a.ndim else a)
    outcome(lambda: x.reshape((1,) * 65))
    outcome(lambda: x.reshape((1,) * 64).unsqueeze(0))


# -- indexing ------------------------------------------------------------------------------------------
@SETTINGS
@given(tensors(), st.integers(-6, 6), st.lists(st.integers(-6, 6), max_size=4), dims, fill_values)
def test_indexing(x, i, idx, dim, value):
    a = ref_of(x)
    r = outcome(lambda: x[i])
    if r is not None:
        same(r, a[i])
    it = tp.tensor(idx, dtype=tp.int64)
    r = outcome(lambda: x[it])
    if r is not None:
        same(r, a[np.array(idx, dtype=np.int64)])
    r = outcome(lambda: x.index_select(dim, it))
    if r is not None and a.ndim:                # (a 0-d input gives a 0-d result, as PyTorch)
        same(r, np.take(a, idx, axis=dim))
    r = outcome(lambda: tp.gather(x, dim, tp.zeros_like(x, dtype=tp.int64) + (idx[0] if idx else 0)))
    if r is not None and a.ndim:
        same(r, np.take_along_axis(a, np.zeros(a.shape, np.int64) + (idx[0] if idx else 0), axis=dim))

    def put():
        y = x.clone()
        y[i] = value
        return y
    outcome(put)


# -- linear algebra ------------------------------------------------------------------------------------
@SETTINGS
@given(tensors(DTYPES, small_shape), tensors(DTYPES, small_shape))
def test_linalg(x, y):
    r = outcome(lambda: x @ y)
    if r is not None and r.dtype.is_floating_point:
        same(r, np.matmul(ref_of(x), ref_of(y)), rtol=1e-2, atol=1e-2)
    r = outcome(lambda: tp.linalg.inv(x))
    if r is not None and r.numel() and abs(np.linalg.det(ref_of(x))).min() > 1e-3:
        same(r, np.linalg.inv(ref_of(x)), rtol=1e-3, atol=1e-3)
    outcome(lambda: tp.linalg.solve(x, y))


# -- nn.functional ---------------------------------------------------------------------------------------
@SETTINGS
@given(tensors(DTYPES), tensors(DTYPES), dims, st.lists(st.integers(-2, 6), min_size=1, max_size=3))
def test_nn_functional(x, w, dim, targets):
    r = outcome(lambda: F.softmax(x, dim))
    if r is not None and x.ndim and x.numel():
        e = np.exp(ref_of(x) - ref_of(x).max(axis=dim, keepdims=True))
        same(r, e / e.sum(axis=dim, keepdims=True), rtol=1e-2, atol=1e-3)
    r = outcome(lambda: F.linear(x, w))
    if r is not None and r.dtype.is_floating_point:
        same(r, np.matmul(ref_of(x), ref_of(w).T), rtol=1e-2, atol=1e-2)
    t = tp.tensor(targets)
    r = outcome(lambda: F.cross_entropy(x, t))
    if r is not None and x.ndim == 2:
        a = ref_of(x)
        lse = np.log(np.exp(a).sum(axis=1))
        same(r, np.mean(lse - a[np.arange(len(targets)), targets]), rtol=1e-3, atol=1e-3)
    outcome(lambda: F.mse_loss(x, w))
    outcome(lambda: F.relu(x))


def test_the_listed_cases():
    """The cases issue 19 lists, with PyTorch's exception types and messages."""
    cases = [
        (lambda: tp.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
        (lambda: -tp.tensor([True]), RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported"),
        (lambda: tp.full((2,), "x"), TypeError, "argument 'fill_value' \\(position 2\\) must be Number, not str"),
        (lambda: tp.full((2,), 300, dtype=tp.uint8), RuntimeError, "value cannot be converted to type uint8_t"),
        (lambda: tp.zeros(2, dtype=tp.int8).fill_(1000), RuntimeError, "value cannot be converted to type int8_t"),
        (lambda: tp.zeros([1] * 65), RuntimeError, "only tensors with up to 64 dims are supported"),
        (lambda: tp.zeros(1).reshape([1] * 65), RuntimeError, "only tensors with up to 64 dims are supported"),
        (lambda: tp.zeros(2 ** 62), RuntimeError, "Storage size calculation overflowed"),
        (lambda: tp.empty(2 ** 40, 2 ** 20), RuntimeError, "can't allocate memory: you tried to allocate"),
        (lambda: tp.zeros(-1), RuntimeError, "negative dimension"),
        (lambda: tp.bernoulli(tp.tensor([1.5])), RuntimeError, "Expected p_in >= 0 && p_in <= 1"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()
        assert outcome(fn) is None
