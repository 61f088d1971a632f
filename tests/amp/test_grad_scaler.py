"""GradScaler: PyTorch's algorithm (scale, unscale_ with the inf/NaN check, skipped steps, growth
and backoff), its errors, state_dict and the disabled pass-through. The expected scale sequences
are those PyTorch 2.13 produces for the same loop."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import tensorplug as torch

X = np.array([[1.0, 2.0], [3.0, 4.0]])
Y = np.array([[1.0], [0.0]])


def _model():
    w = torch.nn.Parameter(torch.tensor([[1.0, -2.0]]))
    b = torch.nn.Parameter(torch.tensor([0.5]))
    return w, b, torch.optim.SGD([w, b], lr=0.01)


def _grads_np(w, b):
    """d mean((X w^T + b - Y)^2) / d(w, b), in float64."""
    r = X @ w.T + b - Y
    return (2 * r * X).mean(0, keepdims=True), (2 * r).mean(0)


def test_scale_sequence_with_skips():
    """init 16, growth every 2 clean steps, an inf gradient at step 2 and a NaN at step 5: the
    steps with them are skipped and the scale backs off (PyTorch's sequence for this loop)."""
    w, b, opt = _model()
    scaler = torch.amp.GradScaler("cpu", init_scale=16.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
    wn, bn = np.array([[1.0, -2.0]]), np.array([0.5])
    scales, trackers, stepped = [], [], []
    x, y = torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32)
    for it in range(7):
        opt.zero_grad()
        loss = ((x.matmul(w.t()) + b - y) ** 2).mean()
        scaler.scale(loss).backward()
        gw, gb = _grads_np(wn, bn)
        np.testing.assert_allclose(w.grad.numpy(), gw * scaler.get_scale(), rtol=1e-5)   # scaled grads
        if it in (2, 5):
            with torch.no_grad():
                w.grad[0, 1] = float("inf") if it == 2 else float("nan")
        before = w.detach().clone()
        assert scaler.step(opt) is None
        scaler.update()
        skip = it in (2, 5)
        if not skip:
            wn, bn = wn - 0.01 * gw, bn - 0.01 * gb
        scales.append(scaler.get_scale())
        trackers.append(scaler._get_growth_tracker())
        stepped.append(not torch.equal(before, w.detach()))
        np.testing.assert_allclose(w.detach().numpy(), wn, rtol=1e-5)
        np.testing.assert_allclose(b.detach().numpy(), bn, rtol=1e-5)
    assert scales == [16.0, 32.0, 16.0, 16.0, 32.0, 16.0, 16.0]
    assert trackers == [1, 0, 0, 1, 0, 0, 1]
    assert stepped == [True, True, False, True, True, False, True]
    assert scaler.state_dict() == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                   "growth_interval": 2, "_growth_tracker": 1}


def test_unscale_divides_the_grads_by_the_scale_once():
    w, b, opt = _model()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    x, y = torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32)
    loss = ((x.matmul(w.t()) + b - y) ** 2).mean()
    scaled = scaler.scale(loss)
    assert scaled.item() == loss.item() * 1024
    scaled.backward()
    scaler.unscale_(opt)
    gw, gb = _grads_np(np.array([[1.0, -2.0]]), np.array([0.5]))
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this optimizer since the "
                                           r"last update\(\).$"):
        scaler.unscale_(opt)
    scaler.step(opt)                                   # does not unscale again
    np.testing.assert_allclose(w.detach().numpy(), np.array([[1.0, -2.0]]) - 0.01 * gw, rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"^step\(\) has already been called since the last update\(\).$"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) is being called after step\(\).$"):
        scaler.unscale_(opt)
    scaler.update()
    assert scaler.get_scale() == 1024.0 and scaler._get_growth_tracker() == 1


def test_growth_stops_at_non_finite_scale():
    """A grown scale that overflows float32 is not taken; the tracker still resets."""
    w = torch.nn.Parameter(torch.tensor([1.0]))
    opt = torch.optim.SGD([w], lr=0.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 127, growth_interval=1)
    for _ in range(2):
        scaler.scale((w * 0.0).sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 2.0 ** 127 and scaler._get_growth_tracker() == 0


def test_update_with_a_new_scale():
    w, b, opt = _model()
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(torch.tensor(1.0))
    scaler.update(3.0)
    assert scaler.get_scale() == 3.0
    scaler.update(torch.tensor(5.0))
    assert scaler.get_scale() == 5.0
    reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with "
              "requires_grad=False.")
    for bad in (torch.tensor([1.0, 2.0]), torch.tensor(2.0, requires_grad=True)):
        with pytest.raises(AssertionError) as e:
            scaler.update(bad)
        assert str(e.value) == reason


def test_accessors_and_state_dict_round_trip():
    s = torch.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=7)
    assert (s.get_scale(), s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == \
        (8.0, 3.0, 0.25, 7)
    assert s.is_enabled() and s._get_growth_tracker() == 0
    s.set_growth_factor(4.0)
    s.set_backoff_factor(0.125)
    s.set_growth_interval(9)
    s.scale(torch.tensor(1.0))
    s.update(6.0)
    sd = s.state_dict()
    assert sd == {"scale": 6.0, "growth_factor": 4.0, "backoff_factor": 0.125, "growth_interval": 9,
                  "_growth_tracker": 0}
    fresh = torch.amp.GradScaler("cpu")
    assert fresh.state_dict() == {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                  "growth_interval": 2000, "_growth_tracker": 0}
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd and fresh.get_scale() == 6.0
    fresh.scale(torch.tensor(1.0))                    # the lazily made scale takes the loaded value
    assert fresh._scale.item() == 6.0
    with pytest.raises(RuntimeError, match="^The source state dict is empty, possibly because it was saved from a "
                                           "disabled instance of GradScaler.$"):
        fresh.load_state_dict({})
    again = pickle.loads(pickle.dumps(fresh))
    assert again.state_dict() == sd


def test_scale_of_containers():
    s = torch.amp.GradScaler("cpu", init_scale=4.0)
    out = s.scale([torch.tensor(1.0), (torch.tensor(2.0), [torch.tensor(3.0)])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    assert [out[0].item(), out[1][0].item(), out[1][1][0].item()] == [4.0, 8.0, 12.0]
    assert [t.item() for t in s.scale(iter([torch.tensor(0.5)]))] == [2.0]
    with pytest.raises(ValueError, match="^outputs must be a Tensor or an iterable of Tensors$"):
        s.scale(3.0)
    assert s.scale(torch.tensor([1, 2])).dtype is torch.float32


def test_errors_before_scale_and_misuse():
    w, b, opt = _model()
    s = torch.amp.GradScaler("cpu")
    fix = ("but _scale is None.  This may indicate your script did not use scaler.scale(loss or outputs) "
           "earlier in the iteration.")
    for call, name in ((lambda: s.step(opt), "step"), (lambda: s.update(), "update"),
                       (lambda: s.unscale_(opt), "unscale_")):
        with pytest.raises(AssertionError) as e:
            call()
        assert str(e.value) == f"Attempted {name} {fix}"
    s.scale(torch.tensor(1.0))
    with pytest.raises(AssertionError, match="^No inf checks were recorded prior to update.$"):
        s.update()
    with pytest.raises(RuntimeError, match="^Closure use is not currently supported if GradScaler is enabled.$"):
        s.step(opt, closure=lambda: 0)
    h = torch.nn.Parameter(torch.tensor([1.0]).half())
    h.grad = torch.tensor([1.0]).half()
    with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
        s.unscale_(torch.optim.SGD([h], lr=0.1))
    with pytest.raises(AssertionError, match=r"^The growth factor must be > 1.0.$"):
        torch.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match=r"^The backoff factor must be < 1.0.$"):
        torch.amp.GradScaler("cpu", backoff_factor=1.0)
    bb = torch.nn.Parameter(torch.tensor([1.0]))
    bb.grad = torch.tensor([1.0])
    s.unscale_(torch.optim.SGD([bb], lr=1.0))
    with pytest.raises(AssertionError, match="^A GradScaler instance may only be pickled at the beginning"):
        pickle.dumps(s)


def test_bfloat16_gradients_are_unscaled():
    """bfloat16 gradients (unlike float16 ones) may be unscaled; inf in them is found."""
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]).to(torch.bfloat16))
    opt = torch.optim.SGD([p], lr=1.0)
    s = torch.amp.GradScaler("cpu", init_scale=4.0)
    s.scale(torch.tensor(1.0))
    p.grad = torch.tensor([8.0, 4.0]).to(torch.bfloat16)
    s.unscale_(opt)
    assert p.grad.dtype is torch.bfloat16 and p.grad.tolist() == [2.0, 1.0]
    s.step(opt)
    assert p.detach().tolist() == [-1.0, 1.0]
    s.update()
    p.grad = torch.tensor([float("inf"), 1.0]).to(torch.bfloat16)
    assert s.step(opt) is None and p.detach().tolist() == [-1.0, 1.0]
    s.update()
    assert s.get_scale() == 2.0


def test_disabled_is_a_pass_through():
    d = torch.amp.GradScaler("cpu", enabled=False)
    t = torch.tensor(2.0)
    assert d.scale(t) is t and d.get_scale() == 1.0 and d.state_dict() == {} and not d.is_enabled()
    assert d._get_growth_tracker() == 0
    calls = []

    class Opt:
        param_groups = []

        def step(self, *a, **k):
            calls.append((a, k))
            return 7
    assert d.step(Opt(), 1, z=2) == 7 and calls == [((1,), {"z": 2})]
    d.update()
    d.unscale_(Opt())
    d.load_state_dict({})


def test_cuda_without_backend_warns_and_disables():
    with pytest.warns(UserWarning) as rec:
        s = torch.amp.GradScaler("cuda")
    assert [str(r.message) for r in rec] == ["torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                                             "Disabling."]
    assert not s.is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not torch.amp.GradScaler("cuda", enabled=False).is_enabled()


def test_cuda_with_backend(cuda_standin):
    """On a "cuda" backend the scale lives on the device and the algorithm is the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = torch.amp.GradScaler("cuda", init_scale=8.0, growth_interval=1)
    p = torch.nn.Parameter(torch.tensor([1.0], device="cuda"))
    opt = torch.optim.SGD([p], lr=1.0)
    s.scale((p * 2.0).sum()).backward()
    assert s._scale.device.type == "cuda" and p.grad.tolist() == [16.0]
    s.step(opt)
    s.update()
    assert p.detach().tolist() == [-1.0] and s.get_scale() == 16.0


def test_deprecated_aliases():
    with pytest.warns(FutureWarning, match=r"^`torch.cpu.amp.GradScaler\(args...\)` is deprecated. Please use "
                                           r"`torch.amp.GradScaler\('cpu', args...\)` instead.$"):
        s = torch.cpu.amp.GradScaler(init_scale=4.0)
    assert isinstance(s, torch.amp.GradScaler) and s.is_enabled() and s.get_scale() == 4.0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        c = torch.cuda.amp.GradScaler()
    assert [(r.category, str(r.message)) for r in rec] == [
        (FutureWarning, "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                        "`torch.amp.GradScaler('cuda', args...)` instead."),
        (UserWarning, "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")]
    assert not c.is_enabled()
    assert type(c).__module__ == "tensorplug.cuda.amp.grad_scaler"
    assert torch.amp.GradScaler.__module__ == "tensorplug.amp.grad_scaler"
