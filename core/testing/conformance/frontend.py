"""Frontend checks on the backend's device: gradients and second gradients of a curated list of ops
against finite differences (float64), device placement of results and gradients, transfers to and
from cpu, generators, and one small training step.

A gradient record is `GradRecord(name, fn, inputs)`: `inputs(rng)` returns float64 NumPy arrays (each
becomes a tensor on the device that requires grad) and `Const(...)` values (tensors that do not, such
as index arrays, or plain Python values). Add one with `grad(...)` below.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Const:
    """A non-differentiable input: a NumPy array becomes a tensor on the device (int64 arrays stay
    int64, bool arrays bool), anything else is passed as it is."""
    value: object


@dataclass
class GradRecord:
    name: str
    family: str
    fn: Callable
    inputs: Callable
    gradgrad: bool = True
    atol: float = 1e-5
    rtol: float = 1e-3
    available: Callable | None = None
    needs: tuple = ()          # dtypes the backend must declare (complex ones for complex autograd)


GRAD_RECORDS: dict[str, GradRecord] = {}


def grad(name, fn, inputs, family="autograd", **kw):
    if name in GRAD_RECORDS:
        raise ValueError(f"two gradient records named {name!r}")
    GRAD_RECORDS[name] = GradRecord(name, family, fn, inputs, **kw)


def _t():
    import tensorplug
    return tensorplug


def _F():
    import tensorplug.nn.functional as F
    return F


def _has(name):
    return lambda: hasattr(_F(), name)


# -- input makers ----------------------------------------------------------------------------------
def U(*shape, lo=-2.0, hi=2.0):
    return lambda rng: rng.uniform(lo, hi, shape)


def away(*shape, lo=0.3, hi=2.0):
    """Values with |v| in [lo, hi] and random signs (away from kinks at 0)."""
    return lambda rng: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def distinct(*shape, gap=0.3):
    """Values whose pairwise differences are at least `gap` (for max, sort, topk)."""
    def make(rng):
        n = int(np.prod(shape))
        return (rng.permutation(n) * gap + rng.uniform(0, gap / 4, n) - n * gap / 2).reshape(shape)
    return make


def ins(*makers):
    def make(rng):
        return [m(rng) if callable(m) else m for m in makers]
    return make


def _well(n, batch=()):
    return lambda rng: rng.uniform(-1, 1, batch + (n, n)) + n * np.eye(n)


def _idx(*v):
    return Const(np.array(v, dtype=np.int64))


# -- the curated list ------------------------------------------------------------------------------
t, F = _t, _F
for _n in ("exp", "sin", "cos", "tanh", "sigmoid", "erf", "expm1", "sinh", "cosh", "atan"):
    grad(_n, (lambda n: lambda x: getattr(t(), n)(x))(_n), ins(U(2, 3)))
for _n, _lo, _hi in (("log", 0.5, 3.0), ("sqrt", 0.5, 3.0), ("log1p", -0.5, 2.0), ("tan", -1.0, 1.0),
                     ("asin", -0.8, 0.8), ("acos", -0.8, 0.8), ("reciprocal", 0.5, 2.0), ("rsqrt", 0.5, 2.0)):
    grad(_n, (lambda n: lambda x: getattr(t(), n)(x))(_n), ins(U(2, 3, lo=_lo, hi=_hi)))
grad("neg", lambda x: -x, ins(U(2, 3)))
grad("abs", lambda x: x.abs(), ins(away(2, 3)))
grad("add", lambda x, y: x + y, ins(U(2, 3), U(3)))
grad("sub", lambda x, y: x - y, ins(U(2, 3), U(2, 1)))
grad("mul", lambda x, y: x * y, ins(U(2, 3), U(3)))
grad("div", lambda x, y: x / y, ins(U(2, 3), away(3, lo=0.5)))
grad("pow", lambda x, y: t().pow(x, y), ins(U(2, 3, lo=0.5, hi=2.0), U(2, 3, lo=-1.0, hi=2.0)))
grad("pow_scalar", lambda x: x ** 3, ins(U(2, 3)))
grad("atan2", lambda x, y: t().atan2(x, y), ins(U(2, 3), away(2, 3, lo=0.5)))
grad("maximum", lambda x, y: t().maximum(x, y), ins(distinct(2, 3), distinct(2, 3, gap=0.31)))
grad("minimum", lambda x, y: t().minimum(x, y), ins(distinct(2, 3), distinct(2, 3, gap=0.31)))
grad("clamp", lambda x: t().clamp(x, -0.5, 0.5),             # values away from the bounds
     ins(lambda rng: np.array([[-0.9, -0.3, 0.1], [0.35, 0.7, -0.6]])))
grad("where", lambda c, x, y: t().where(c, x, y),
     ins(Const(np.array([[True, False, True], [False, False, True]])), U(2, 3), U(3)))
grad("relu", lambda x: F().relu(x), ins(away(2, 3)), family="nn", available=_has("relu"))

grad("sum", lambda x: x.sum(), ins(U(2, 3)), family="reduction")
grad("sum_dim", lambda x: x.sum(1), ins(U(2, 3, 2)), family="reduction")
grad("mean", lambda x: x.mean((0, 2)), ins(U(2, 3, 2)), family="reduction")
grad("prod", lambda x: x.prod(1), ins(away(2, 3, lo=0.5)), family="reduction")
grad("prod_with_zero", lambda x: x.prod(), ins(lambda rng: np.array([1.5, 0.0, -2.0, 0.7])), family="reduction")
grad("amax", lambda x: x.amax(1), ins(distinct(2, 4)), family="reduction")
grad("max_dim", lambda x: t().max(x, 1)[0], ins(distinct(3, 3)), family="reduction")
grad("min_dim", lambda x: t().min(x, 0)[0], ins(distinct(3, 3)), family="reduction")
grad("cumsum", lambda x: t().cumsum(x, 1), ins(U(2, 3)), family="reduction")
grad("cumprod", lambda x: t().cumprod(x, 1), ins(away(2, 3, lo=0.5)), family="reduction")
grad("softmax", lambda x: t().softmax(x, 1), ins(U(2, 3)), family="reduction")
grad("log_softmax", lambda x: t().log_softmax(x, 1), ins(U(2, 3)), family="reduction")
grad("logsumexp", lambda x: t().logsumexp(x, 1), ins(U(2, 3)), family="reduction")
grad("var", lambda x: x.var(1), ins(U(2, 4)), family="reduction")
grad("std", lambda x: x.std(1), ins(U(2, 4)), family="reduction")
grad("norm", lambda x: x.norm(), ins(U(2, 3)), family="reduction")
grad("sort", lambda x: t().sort(x, 1)[0], ins(distinct(2, 4)), family="reduction")
grad("topk", lambda x: t().topk(x, 2)[0], ins(distinct(2, 4)), family="reduction")

grad("reshape", lambda x: x.reshape(3, 2) * x.reshape(3, 2), ins(U(2, 3)), family="movement")
grad("permute", lambda x, y: x.permute(2, 0, 1) * y, ins(U(2, 3, 2), U(3)), family="movement")
grad("transpose_matmul", lambda x: x.t() @ x, ins(U(2, 3)), family="movement")
grad("expand", lambda x: x.expand(3, 4) * x, ins(U(3, 1)), family="movement")
grad("slice_step", lambda x: x[::2, 1:] * 2, ins(U(4, 3)), family="movement")
grad("narrow", lambda x: x.narrow(1, 1, 2) ** 2, ins(U(2, 4)), family="movement")
grad("cat", lambda x, y: t().cat([x, y * y], 1), ins(U(2, 2), U(2, 3)), family="movement")
grad("stack", lambda x, y: t().stack([x, x * y], 0), ins(U(3), U(3)), family="movement")
grad("flip", lambda x: x.flip(1) * x, ins(U(2, 3)), family="movement")
grad("roll", lambda x: t().roll(x, 1, 1) * x, ins(U(2, 3)), family="movement")
grad("diagonal", lambda x: t().diagonal(x) ** 2, ins(U(3, 3)), family="movement")
grad("unsqueeze", lambda x: x.unsqueeze(1).squeeze(1) ** 2, ins(U(2, 3)), family="movement")
grad("repeat", lambda x: x.repeat(2, 1) ** 2, ins(U(2, 2)), family="movement")
grad("pad", lambda x: F().pad(x, (1, 2), mode="reflect") ** 2, ins(U(2, 4)), family="movement",
     available=_has("pad"))

grad("gather", lambda x, i: t().gather(x * x, 1, i), ins(U(2, 3), Const(np.array([[0, 0, 2], [1, 2, 2]]))),
     family="indexing")
grad("scatter_add", lambda x, i, s: x.scatter_add(1, i, s * s), ins(U(2, 3), Const(np.array([[0, 0], [2, 2]])),
                                                                    U(2, 2)), family="indexing")
grad("index_select", lambda x: t().index_select(x, 0, t().tensor([2, 0, 2], device=x.device)) ** 2,
     ins(U(3, 2)), family="indexing")
grad("getitem_negative_repeated", lambda x, i: x[i] ** 2, ins(U(4, 2), _idx(-1, 0, 2, -1)), family="indexing")
grad("getitem_mask", lambda x, m: x[m] ** 2, ins(U(2, 3), Const(np.array([[True, False, True], [False, True, True]]))),
     family="indexing")
grad("masked_fill", lambda x, m: x.masked_fill(m, 0.5) * x, ins(U(2, 3), Const(np.array([True, False, True]))),
     family="indexing")
grad("index_put_accumulate", lambda x, v: x.index_put((t().tensor([1, 1, 0], device=x.device),), v * v,
                                                      accumulate=True), ins(U(3, 2), U(3, 2)), family="indexing")

grad("matmul", lambda a, b: a @ b, ins(U(3, 4), U(4, 2)), family="linalg")
grad("matmul_batched", lambda a, b: t().matmul(a, b), ins(U(2, 1, 2, 3), U(2, 3, 2)), family="linalg")
grad("matmul_vector", lambda a, b: t().matmul(a, b), ins(U(3), U(3, 2)), family="linalg")
grad("inverse", lambda a: t().inverse(a), ins(_well(3)), family="linalg")
grad("solve", lambda a, b: t().linalg.solve(a, b), ins(_well(3), U(3, 2)), family="linalg")

grad("linear", lambda x, w, b: F().linear(x, w, b), ins(U(2, 3), U(4, 3), U(4)), family="nn",
     available=_has("linear"))
grad("mse_loss", lambda x, y: F().mse_loss(x, y), ins(U(2, 3), U(2, 3)), family="nn", available=_has("mse_loss"))
grad("cross_entropy", lambda x, y: F().cross_entropy(x, y), ins(U(3, 4), _idx(0, 3, 1)), family="nn",
     available=_has("cross_entropy"))
grad("conv1d", lambda x, w, b: F().conv1d(x, w, b, padding=1), ins(U(1, 2, 5), U(3, 2, 2), U(3)), family="nn",
     available=_has("conv1d"))
grad("conv2d_strided", lambda x, w: F().conv2d(x, w, stride=2), ins(U(1, 1, 4, 4), U(2, 1, 2, 2)), family="nn",
     available=_has("conv2d"))
grad("conv_transpose1d", lambda x, w: F().conv_transpose1d(x, w, stride=2), ins(U(1, 2, 3), U(2, 1, 2)),
     family="nn", available=_has("conv_transpose1d"))
grad("max_pool1d", lambda x: F().max_pool1d(x, 2), ins(distinct(1, 2, 4)), family="nn", available=_has("max_pool1d"))
grad("avg_pool1d", lambda x: F().avg_pool1d(x, 2, padding=1), ins(U(1, 2, 4)), family="nn",
     available=_has("avg_pool1d"))
grad("batch_norm", lambda x, w, b: F().batch_norm(x, None, None, w, b, training=True), ins(U(3, 2, 2), U(2), U(2)),
     family="nn", available=_has("batch_norm"))
grad("layer_norm", lambda x, w, b: F().layer_norm(x, (3,), w, b), ins(U(2, 3), U(3), U(3)), family="nn",
     available=_has("layer_norm"))
grad("embedding_bag", lambda w: F().embedding_bag(t().tensor([0, 2, 2, 1], device=w.device), w,
                                                  t().tensor([0, 1], device=w.device), mode="mean"),
     ins(U(3, 2)), family="nn", available=_has("embedding_bag"))

# complex autograd and FFTs: complex values made from float64 inputs, real results (PyTorch's convention:
# the gradient of z is dL/dRe + i dL/dIm), checked in the inputs' real coordinates
_C = ("complex128",)
grad("complex_mul_abs", lambda a, b: (t().complex(a, b) * t().complex(b, a) + 1j).abs(), ins(U(2, 3), U(2, 3)),
     needs=_C)
grad("complex_exp_div", lambda a, b: t().view_as_real(t().complex(a, b).exp() / t().complex(b, a + 3.0)),
     ins(U(3), U(3)), needs=_C)
grad("complex_matmul", lambda a, b: (t().complex(a, b) @ t().complex(b, a).mT).angle(), ins(U(2, 3), U(2, 3)),
     needs=_C)
grad("fft_rfft", lambda x: t().fft.rfft(x, norm="ortho").abs(), ins(U(2, 5)), needs=_C)
grad("fft_irfft", lambda a, b: t().fft.irfft(t().complex(a, b), n=7), ins(U(4), U(4)), needs=_C)
grad("fft_fft2", lambda a, b: t().view_as_real(t().fft.fft2(t().complex(a, b))), ins(U(2, 3), U(2, 3)), needs=_C)


# -- running them ----------------------------------------------------------------------------------
def make_inputs(rec, device, rng):
    tp = _t()
    out = []
    for v in rec.inputs(rng):
        if isinstance(v, Const):
            c = v.value
            out.append(tp.tensor(c, device=device) if isinstance(c, np.ndarray) else c)
        else:
            out.append(tp.tensor(np.asarray(v, dtype=np.float64), dtype=tp.float64, device=device,
                                 requires_grad=True))
    return out


def _outputs(r):
    tp = _t()
    if isinstance(r, tp.Tensor):
        return [r]
    return [o for o in r if isinstance(o, tp.Tensor)]


def check_gradient(rec, device, second=False):
    """gradcheck (or gradgradcheck) of rec.fn on `device` in float64, and placement of outputs and
    gradients on that device."""
    from tensorplug.autograd import GradcheckError, gradcheck, gradgradcheck

    from .checks import CheckFailure, quiet
    from .opdb._base import rng_for
    inputs = make_inputs(rec, device, rng_for("grad/" + rec.name, "float64"))
    try:
        with quiet():
            if second:
                gradgradcheck(rec.fn, inputs, atol=rec.atol, rtol=rec.rtol)
                return
            gradcheck(rec.fn, inputs, atol=rec.atol, rtol=rec.rtol)
            outs = _outputs(rec.fn(*inputs))
    except GradcheckError as e:
        raise CheckFailure(f"{'second' if second else 'first'} derivatives of {rec.name} on {device}: {e}") from None
    for o in outs:
        if o.device != device:
            raise CheckFailure(f"{rec.name}: the output is on {o.device}, not {device}")
    total = sum(o.sum() for o in outs if o.dtype.is_floating_point and o.requires_grad)
    total.backward()
    for i, x in enumerate(inputs):
        if getattr(x, "requires_grad", False):
            if x.grad is None:
                raise CheckFailure(f"{rec.name}: input {i} got no gradient")
            if x.grad.device != device or x.grad.dtype is not x.dtype:
                raise CheckFailure(f"{rec.name}: the gradient of input {i} is {x.grad.dtype} on {x.grad.device}, "
                                   f"expected {x.dtype} on {device}")


# -- device checks ---------------------------------------------------------------------------------
def _on(t_, backend, device, what):
    from .checks import CheckFailure
    if t_.device != device or t_.backend is not backend:
        raise CheckFailure(f"{what}: on {t_.device} with backend {t_.backend.name!r}, expected {device} "
                           f"with backend {backend.name!r}")


def check_creation(backend, device):
    """Creation functions with device= make tensors on the device, served by this backend."""
    tp = _t()
    made = {
        "zeros": lambda: tp.zeros(2, 3, device=device), "ones": lambda: tp.ones(4, device=device),
        "full": lambda: tp.full((2,), 1.5, device=device), "arange": lambda: tp.arange(5, device=device),
        "eye": lambda: tp.eye(3, device=device), "tensor": lambda: tp.tensor([[1, 2], [3, 4]], device=device),
        "empty": lambda: tp.empty(3, device=device), "linspace": lambda: tp.linspace(0, 1, 5, device=device),
        "rand": lambda: tp.rand(3, device=device), "randn": lambda: tp.randn(3, device=device),
        "randint": lambda: tp.randint(0, 5, (4,), device=device), "randperm": lambda: tp.randperm(5, device=device),
        "zeros_like": lambda: tp.zeros_like(tp.ones(2, device=device)),
    }
    from .checks import CheckFailure
    for name, fn in made.items():
        try:
            x = fn()
        except Exception as e:  # noqa: BLE001
            raise CheckFailure(f"{name}(..., device={str(device)!r}) raised {type(e).__name__}: {e}") from None
        _on(x, backend, device, f"{name}(..., device={str(device)!r})")
    if tp.arange(5, device=device).tolist() != [0, 1, 2, 3, 4] or tp.eye(2, device=device).tolist() != [[1, 0], [0, 1]]:
        raise CheckFailure("arange / eye made on the device have wrong values")


def check_transfer(backend, device):
    """Every declared dtype goes cpu -> device -> cpu unchanged, as an independent copy."""
    from .checks import CheckFailure
    tp = _t()
    for dt in sorted(backend.dtypes):
        vals = np.arange(-3, 3).reshape(2, 3) if dt not in ("bool", "uint8") else np.arange(6).reshape(2, 3) % 3
        cpu = tp.tensor(vals, dtype=getattr(tp, dt if dt != "bool" else "bool"))
        dev = cpu.to(device)
        _on(dev, backend, device, f"{dt} tensor moved to {device}")
        if dev.dtype is not cpu.dtype or dev.tolist() != cpu.tolist():
            raise CheckFailure(f"{dt}: values or dtype changed moving to {device}: {dev.tolist()} ({dev.dtype})")
        back = dev.to("cpu")
        if back.device.type != "cpu" or back.tolist() != cpu.tolist() or back.dtype is not cpu.dtype:
            raise CheckFailure(f"{dt}: values changed on the way back to cpu: {back.tolist()}")
        if device.type != "cpu":
            cpu.fill_(1)
            if dev.tolist() == cpu.tolist():
                raise CheckFailure(f"{dt}: the {device} copy shares memory with the cpu tensor")
    x = tp.arange(12.0).reshape(3, 4).t().to(device)          # a non-contiguous source
    if x.tolist() != np.arange(12.0).reshape(3, 4).T.tolist():
        raise CheckFailure("a transposed cpu tensor moved to the device has wrong values")


def check_results_stay(backend, device):
    """Results of ops (and gradients) on device tensors stay on the device."""
    from .checks import CheckFailure
    tp = _t()
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    y = tp.ones(2, 2, device=device)
    outs = {"x * y + 1": x * y + 1, "matmul": x @ y, "sum": x.sum(), "getitem": x[tp.tensor([1, 0], device=device)],
            "cat": tp.cat([x, y]), "where": tp.where(x > 2, x, y), "argmax": x.argmax(), "comparison": x > y,
            "softmax": tp.softmax(x, 1), "sigmoid": tp.sigmoid(x)}
    for name, r in outs.items():
        _on(r, backend, device, name)
    picked = x[tp.tensor([-1, 0, -1], device=device)]          # negative and repeated indices
    if picked.tolist() != [[3.0, 4.0], [1.0, 2.0], [3.0, 4.0]]:
        raise CheckFailure(f"x[[-1, 0, -1]] is {picked.tolist()}")
    (x * x).sum().backward()
    _on(x.grad, backend, device, "the gradient of x * x")
    if x.grad.tolist() != [[2.0, 4.0], [6.0, 8.0]]:
        raise CheckFailure(f"the gradient of (x * x).sum() is {x.grad.tolist()}")


def check_generator(backend, device):
    """Generators on the device are reproducible; manual_seed reseeds the device's default one."""
    from .checks import CheckFailure
    tp = _t()
    g = tp.Generator(device=device.type).manual_seed(3)
    a = tp.rand(5, generator=g, device=device).tolist()
    g.manual_seed(3)
    if tp.rand(5, generator=g, device=device).tolist() != a:
        raise CheckFailure("a generator reseeded with the same seed drew different numbers")
    tp.manual_seed(11)
    b = tp.randn(4, device=device).tolist()
    tp.manual_seed(11)
    if tp.randn(4, device=device).tolist() != b:
        raise CheckFailure("manual_seed did not make randn reproducible on the device")


def check_training_step(backend, device):
    """A tiny MLP (linear -> relu -> linear, mse loss) trained by SGD on the device: the loss falls."""
    from .checks import CheckFailure
    tp = _t()
    g = tp.Generator(device=device.type).manual_seed(0)
    x = tp.randn(16, 3, generator=g, device=device)
    y = (x[:, :1] * 2 - x[:, 1:2]).detach()
    w1 = (tp.randn(3, 8, generator=g, device=device) * 0.5).requires_grad_()
    b1 = tp.zeros(8, device=device, requires_grad=True)
    w2 = (tp.randn(8, 1, generator=g, device=device) * 0.5).requires_grad_()
    params = [w1, b1, w2]
    losses = []
    for _ in range(30):
        h = tp.relu(x @ w1 + b1)
        loss = ((h @ w2 - y) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with tp.no_grad():
            for p in params:
                p -= 0.05 * p.grad
        losses.append(loss.item())
    _on(loss, backend, device, "the loss")
    if not losses[-1] < 0.5 * losses[0]:
        raise CheckFailure(f"the loss did not fall by half in 30 SGD steps: {losses[0]:.4g} -> {losses[-1]:.4g}")


DEVICE_CHECKS = {"creation": check_creation, "transfer": check_transfer, "results_stay": check_results_stay,
                 "generator": check_generator, "training_step": check_training_step}
