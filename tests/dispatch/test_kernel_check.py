"""Kernel results checked against the frontend's expectation: each kind of bad result raises at once,
naming kernel, backend, inputs and expectation; built-in backends stay raw unless asked."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.dispatch import KernelContractError, hookimpl, registry
from tensorplug.dispatch import kernel_check


def _backend(name, **bad):
    """A third-party backend (NumPy's kernels) on its own device type, with kernels replaced."""
    class Planted(NumpyBackend):
        device_type = name
        priority = 0
        version = "0.1"

        def native_kernels(self):
            k = dict(NumpyBackend.native_kernels(self))
            for kernel, make in bad.items():
                k[kernel] = make(k[kernel])
            return k
    Planted.name = name
    return Planted()


@pytest.fixture
def registered():
    names = []

    def add(backend):
        class Plugin:
            @hookimpl
            def tensorplug_register_backends(self, registry):
                registry.add(backend)
        registry.register_plugin(Plugin(), name=f"kcheck-{backend.name}")
        names.append(backend.name)
        return backend
    yield add
    for n in names:
        registry.unregister_plugin(f"kcheck-{n}")


def _raises(fn, *parts):
    with pytest.raises(KernelContractError) as e:
        fn()
    msg = str(e.value)
    for p in parts:
        assert p in msg, f"{p!r} not in {msg!r}"
    return msg


def test_error_is_a_runtime_error():
    """KernelContractError is a RuntimeError, exported as tensorplug.dispatch.KernelContractError."""
    assert issubclass(KernelContractError, RuntimeError)


def test_matmul_of_the_wrong_shape(registered):
    """A matmul that drops a column raises at the op, naming the shapes expected and seen."""
    registered(_backend("kc_mm", matmul=lambda f: lambda a, b: f(a, b)[..., :-1]))
    a = tp.ones(2, 3, device="kc_mm")
    b = tp.ones(3, 4, device="kc_mm")
    _raises(lambda: a @ b, "kernel 'matmul'", "backend 'kc_mm'", "float32[2, 3], float32[3, 4]",
            "returned numpy.ndarray float32[2, 3]", "wrong shape", "expected numpy.ndarray float32[2, 4]")


def test_mul_of_the_wrong_shape(registered):
    """A mul that does not broadcast (returns the first operand's shape) is caught."""
    registered(_backend("kc_mul", mul=lambda f: lambda x, y, out=None: f(x, y)[:1]))
    a = tp.ones(3, 1, device="kc_mul")
    b = tp.ones(1, 4, device="kc_mul")
    _raises(lambda: a * b, "kernel 'mul'", "backend 'kc_mul'", "float32[3, 1], float32[1, 4]",
            "wrong shape", "float32[3, 4]")
    _raises(lambda: a * a, "kernel 'mul'", "float32[3, 1], float32[3, 1]", "returned numpy.ndarray float32[1, 1]")


def test_frontend_binary_path_catches_each_kind(registered):
    """Pointwise binary ops check against the broadcast shape the frontend computed: the operator and
    function forms, a reflected scalar, and a comparison that does not return bool all raise."""
    registered(_backend("kc_fb", sub=lambda f: lambda x, y, out=None: f(x, y)[..., :1],
                        lt=lambda f: lambda x, y, out=None: f(x, y).astype(np.float32),
                        maximum=lambda f: lambda x, y, out=None: np.asarray(f(x, y), dtype=np.float64)))
    a = tp.ones(2, 3, device="kc_fb")
    b = tp.ones(3, device="kc_fb")
    _raises(lambda: a - b, "kernel 'sub'", "float32[2, 3], float32[3]", "returned numpy.ndarray float32[2, 1]",
            "expected numpy.ndarray float32[2, 3]")
    _raises(lambda: tp.sub(a, b), "kernel 'sub'", "wrong shape", "float32[2, 3]")
    _raises(lambda: 2.0 - a, "kernel 'sub'", "2.0, float32[2, 3]", "wrong shape")
    _raises(lambda: a < b, "kernel 'lt'", "returned numpy.ndarray float32[2, 3]", "wrong dtype",
            "expected numpy.ndarray bool[2, 3]")
    _raises(lambda: a < 0.5, "kernel 'lt'", "wrong dtype", "bool[2, 3]")
    _raises(lambda: tp.maximum(a, b), "kernel 'maximum'", "float64[2, 3]", "wrong dtype")


def test_frontend_binary_path_passes_correct_results(registered):
    """A correct backend through the checked frontend path: broadcasting, scalars on either side,
    comparisons and integer ops give NumPy's values (no false alarms)."""
    b = registered(_backend("kc_fbok"))
    rng = np.random.default_rng(1)
    xn, yn = rng.standard_normal((4, 1, 3)).astype(np.float32), rng.standard_normal((5, 1)).astype(np.float32)
    x, y = tp.tensor(xn, device="kc_fbok"), tp.tensor(yn, device="kc_fbok")
    assert isinstance(x._k["__check__"], dict) and "add" in x._k["__check__"]
    np.testing.assert_array_equal((x + y).cpu().numpy(), xn + yn)
    np.testing.assert_array_equal((3.0 - x).cpu().numpy(), np.float32(3.0) - xn)
    np.testing.assert_array_equal((x * 2).cpu().numpy(), xn * np.float32(2))
    np.testing.assert_array_equal((x < y).cpu().numpy(), xn < yn)
    np.testing.assert_array_equal((y >= 0.0).cpu().numpy(), yn >= 0)
    np.testing.assert_array_equal(tp.div(x, y).cpu().numpy(), xn / yn)
    i = tp.arange(6, device="kc_fbok")
    np.testing.assert_array_equal((i % 4 + i).cpu().numpy(), np.arange(6) % 4 + np.arange(6))
    np.testing.assert_array_equal(tp.eq(i, 3).cpu().numpy(), np.arange(6) == 3)
    assert b.kernels["__check__"]["add"].__name__ == "checked_add"


def test_float64_result_for_float32_inputs(registered):
    """An add that computes in float64 and reports it is caught; values are never silently wrong."""
    registered(_backend("kc_f64", add=lambda f: lambda x, y, out=None: f(x, y).astype(np.float64),
                        exp=lambda f: lambda x, out=None: f(x).astype(np.float64)))
    a = tp.ones(2, device="kc_f64")
    _raises(lambda: a + a, "kernel 'add'", "returned numpy.ndarray float64[2]", "wrong dtype",
            "expected numpy.ndarray float32[2]")
    _raises(lambda: a + 1.5, "kernel 'add'", "float32[2], 1.5", "wrong dtype")
    _raises(lambda: a.exp(), "kernel 'exp'", "wrong dtype", "float32[2]")


def test_non_array_result(registered):
    """A sum returning a Python float instead of a 0-d array is caught."""
    registered(_backend("kc_host", sum=lambda f: lambda x, axes, keepdims, dtype=None: float(f(x, axes, keepdims, dtype))))
    a = tp.ones(2, 3, device="kc_host")
    _raises(lambda: a.sum(), "kernel 'sum'", "returned 6.0 (not an array)", "expected numpy.ndarray float32[]")


def test_array_of_the_wrong_type(registered):
    """A max returning a NumPy scalar (a host value, not the backend's array type) is caught."""
    registered(_backend("kc_type", max=lambda f: lambda x, axes, keepdims: f(x, axes, keepdims)[()]))
    a = tp.arange(6.0, device="kc_type")
    _raises(lambda: a.max(), "kernel 'max'", "returned numpy.float32 float32[]", "wrong array type",
            "expected numpy.ndarray float32[]")


def test_tuple_result_element(registered):
    """nonzero returning int32 indices names the element that is wrong."""
    registered(_backend("kc_nz", nonzero=lambda f: lambda x: tuple(i.astype(np.int32) for i in f(x))))
    a = tp.tensor([0.0, 1.0, 2.0], device="kc_nz")
    _raises(lambda: a.nonzero(), "kernel 'nonzero[0]'", "int32", "expected numpy.ndarray int64")


def test_reduction_shape_and_dtype(registered):
    """argmax keeping the reduced axis where keepdims is False, and a sum of the wrong dtype."""
    registered(_backend("kc_red", argmax=lambda f: lambda x, axis, keepdims: f(x, axis, True),
                        sum=lambda f: lambda x, axes, keepdims, dtype=None: f(x, axes, keepdims).astype(np.float16)))
    a = tp.ones(2, 3, device="kc_red")
    _raises(lambda: a.argmax(1), "kernel 'argmax'", "int64[2, 1]", "expected numpy.ndarray int64[2]")
    _raises(lambda: a.sum(0), "kernel 'sum'", "float32[2, 3], (0,), False", "returned numpy.ndarray float16[3]",
            "expected numpy.ndarray float32[3]")


def test_device_mismatch():
    """A result on another device than its input (arrays with a .device) is caught by the rule-checked
    kernels (the pointwise fast path compares type, dtype and shape only)."""
    class Arr:
        def __init__(self, shape, dtype, device):
            self.shape, self.dtype, self.device = shape, np.dtype(dtype), device
    ctx = kernel_check._Context(_backend("kc_dev"))
    mm = kernel_check.wrap("matmul", lambda a, b: Arr((a.shape[0], b.shape[1]), a.dtype, "gpu:0"), ctx)
    total = kernel_check.wrap("sum", lambda x, axes, keepdims, dtype=None: Arr((), x.dtype, "gpu:0"), ctx)
    x = Arr((2, 2), "float32", "gpu:1")
    _raises(lambda: mm(x, x), "kernel 'matmul'", "float32[2, 2], float32[2, 2]", "wrong device", "on device gpu:1")
    _raises(lambda: total(x, None, False), "kernel 'sum'", "wrong device")
    assert mm(Arr((2, 2), "float32", "gpu:0"), x).device == "gpu:0"


def test_good_backend_is_wrapped_and_correct(registered):
    """A correct third-party backend has checked kernels (natives only) and computes NumPy's values,
    out= included, through a small training step."""
    b = registered(_backend("kc_good"))
    rng = np.random.default_rng(0)
    xn, wn = rng.standard_normal((8, 5)), rng.standard_normal((5, 3))
    x = tp.tensor(xn, device="kc_good")
    w = tp.tensor(wn, device="kc_good", requires_grad=True)
    loss = (x @ w).relu().sum()
    loss.backward()
    ref = np.maximum(xn @ wn, 0)
    np.testing.assert_allclose(loss.item(), ref.sum(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.cpu().numpy(), xn.T @ (ref > 0), rtol=1e-12)
    out = tp.empty(8, 3, dtype=tp.float64, device="kc_good")
    tp.add(x @ w.detach(), 1.0, out=out)
    np.testing.assert_allclose(out.cpu().numpy(), xn @ wn + 1, rtol=1e-12)
    y = x[1:, ::2].flip(0).cumsum(1)
    np.testing.assert_allclose(y.cpu().numpy(), np.cumsum(xn[1:, ::2][::-1], 1), rtol=1e-12)
    K = b.kernels
    assert getattr(K["add"], "__kernel_check__", False) and getattr(K["matmul"], "__kernel_check__", False)
    assert K["add"].__wrapped__ is b._native["add"]
    assert not getattr(K["assign"], "__kernel_check__", False)      # returns nothing: left raw


def test_builtin_tables_are_raw():
    """The built-in NumPy backend's table entries are the raw kernel functions (no wrapper on the hot path)."""
    b = registry.backend_for("cpu")
    if os.environ.get(kernel_check.ENV):
        pytest.skip(f"{kernel_check.ENV} is set")
    assert kernel_check.is_builtin(b)
    for name in ("add", "mul", "matmul", "sum", "reshape", "from_numpy"):
        assert not getattr(b.kernels[name], "__kernel_check__", False)
        assert b.kernels[name] is b._native[name]
    x = tp.ones(2)
    assert x._k["add"] is b._native["add"]
    assert x._k["__check__"] is None        # the frontend's binary ops call the raw kernels


PROBE = textwrap.dedent('''
    import json, tensorplug as tp
    from tensorplug.backends.numpy_backend import NumpyBackend
    from tensorplug.dispatch import hookimpl, registry
    class Other(NumpyBackend):
        name = device_type = "kc_env"
    class P:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(Other())
    registry.register_plugin(P(), name="kc-env")
    tp.ones(1); tp.ones(1, device="kc_env")
    print(json.dumps({n: hasattr(registry.compute[n].kernels["add"], "__kernel_check__") for n in ("numpy", "kc_env")}))
''')


@pytest.mark.parametrize("value,numpy_checked,other_checked",
                         [(None, False, True), ("1", True, True), ("yes", True, True), ("0", False, False)])
def test_environment_variable(value, numpy_checked, other_checked):
    """Unset: only non-built-ins are checked; TENSORPLUG_CHECK_KERNELS=1 checks built-ins too; =0 none."""
    env = {k: v for k, v in os.environ.items() if k != kernel_check.ENV}
    if value is not None:
        env[kernel_check.ENV] = value
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    import json
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"numpy": numpy_checked, "kc_env": other_checked}


def test_shape_rules():
    """The cheap expectations match NumPy on the kernels whose shapes are computed."""
    x = np.zeros((4, 5, 6), np.float32)
    cases = [
        (kernel_check._r_slice, (x, (1, slice(None, None, 2), None, Ellipsis)), x[1, ::2, None, ...]),
        (kernel_check._r_slice, (x, (Ellipsis, slice(4, 1, -1))), x[..., 4:1:-1]),
        (kernel_check._r_diagonal, (x, 1, 0, 2), np.diagonal(x, 1, 0, 2)),
        (kernel_check._r_diagonal, (x, -2, 2, 1), np.diagonal(x, -2, 2, 1)),
        (kernel_check._r_matmul, (x, np.zeros(6, np.float32)), x @ np.zeros(6, np.float32)),
        (kernel_check._r_matmul, (np.zeros(5, np.float32), x[:, :, :2]), np.zeros(5, np.float32) @ x[:, :, :2]),
        (kernel_check._r_matmul, (np.zeros((2, 1, 3, 5), np.float32), x), np.zeros((2, 1, 3, 5), np.float32) @ x),
        (kernel_check._r_reduce, (x, (0, 2), True), x.sum((0, 2), keepdims=True)),
        (kernel_check._r_reduce, (x, None, False), x.sum()),
        (kernel_check._r_reshape, (x, (2, -1)), x.reshape(2, -1)),
        (kernel_check._r_pad, (x, ((1, 0), (0, 2), (3, 3)), "constant", 0), np.pad(x, ((1, 0), (0, 2), (3, 3)))),
        (kernel_check._r_concat, ([x, x[:, :2]], 1), np.concatenate([x, x[:, :2]], 1)),
        (kernel_check._r_arange, (0.0, 1.0, 0.3, "float32"), np.arange(0.0, 1.0, 0.3)),
    ]
    for rule, args, ref in cases:
        assert rule(*args)[1][0] == ref.shape, (rule.__name__, args[1:])


def test_bad_variable_value(monkeypatch):
    """A value that is no boolean is a configuration error naming the variable."""
    from tensorplug.dispatch.config import ConfigError
    monkeypatch.setenv(kernel_check.ENV, "maybe")
    with pytest.raises(ConfigError, match="TENSORPLUG_CHECK_KERNELS='maybe' is not a boolean"):
        kernel_check.wanted(_backend("kc_var"))
    monkeypatch.setenv(kernel_check.ENV, "OFF")
    assert not kernel_check.wanted(_backend("kc_var"))
