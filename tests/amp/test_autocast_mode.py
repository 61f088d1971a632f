"""torch.autocast as a context manager and decorator, its state functions, and its warnings."""
from __future__ import annotations

import threading
import warnings

import pytest

import tensorplug as torch


def _mm_dtype():
    a = torch.ones(2, 2)
    return (a @ a).dtype


def test_defaults_per_device_type():
    """Default autocast dtypes: bfloat16 on the CPU, float16 on CUDA; autocast is off."""
    assert torch.get_autocast_dtype("cpu") is torch.bfloat16
    assert torch.get_autocast_dtype("cuda") is torch.float16
    assert torch.is_autocast_enabled("cpu") is False
    assert torch.is_autocast_enabled() is False
    assert torch.is_autocast_cache_enabled() is True
    assert torch.amp.is_autocast_available("cpu") and torch.amp.is_autocast_available("cuda")
    assert not torch.amp.is_autocast_available("meta")


def test_aliases_are_one_class():
    """torch.autocast is torch.amp.autocast is torch.amp.autocast_mode.autocast."""
    assert torch.autocast is torch.amp.autocast is torch.amp.autocast_mode.autocast
    assert torch.GradScaler is torch.amp.GradScaler


def test_context_sets_and_restores_state():
    """Inside: enabled with the requested dtype; after: the previous state again."""
    with torch.autocast("cpu", dtype=torch.float16) as ac:
        assert ac.fast_dtype is torch.float16 and ac.device == "cpu"
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") is torch.float16
        assert _mm_dtype() is torch.float16
    assert not torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") is torch.bfloat16
    assert _mm_dtype() is torch.float32


def test_default_dtype_is_bfloat16_on_cpu():
    with torch.autocast("cpu"):
        assert _mm_dtype() is torch.bfloat16


def test_nesting_and_disabled_regions():
    """A nested enabled=False region turns autocast off and the outer region's state comes back."""
    with torch.autocast("cpu"):
        with torch.autocast("cpu", enabled=False):
            assert not torch.is_autocast_enabled("cpu")
            assert _mm_dtype() is torch.float32
            with torch.autocast("cpu", dtype=torch.float16):
                assert _mm_dtype() is torch.float16
            assert _mm_dtype() is torch.float32
        assert _mm_dtype() is torch.bfloat16
    assert _mm_dtype() is torch.float32


def test_state_restored_after_exception():
    with pytest.raises(ZeroDivisionError):
        with torch.autocast("cpu"):
            1 / 0
    assert not torch.is_autocast_enabled("cpu")
    assert torch.autocast_increment_nesting() == 1
    assert torch.autocast_decrement_nesting() == 0


def test_decorator_and_recursion():
    """As a decorator (one instance reused, also recursively) each call runs under autocast and the
    state outside is restored."""
    @torch.autocast("cpu", dtype=torch.float16)
    def f(n):
        inner = f(n - 1) if n else None
        return _mm_dtype(), torch.is_autocast_enabled("cpu"), inner
    out = f(2)
    assert out[0] is torch.float16 and out[1] and out[2][2][0] is torch.float16
    assert not torch.is_autocast_enabled("cpu")
    assert f.__name__ == "f"


def test_decorator_needs_callable():
    with pytest.raises(TypeError, match=r"autocast\(\)\(func\) requires a callable, but got int"):
        torch.autocast("cpu")(3)


def test_bad_device_type():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: `<class 'int'>`"):
        torch.autocast(1)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'foo'"):
        torch.autocast("foo")


def test_unsupported_cpu_dtype_warns_and_disables():
    with pytest.warns(UserWarning) as rec:
        ac = torch.autocast("cpu", dtype=torch.float32)
    assert str(rec[0].message) == ("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                                   "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.")
    with ac:
        assert not torch.is_autocast_enabled("cpu")
        assert _mm_dtype() is torch.float32


def test_cuda_without_backend_warns_and_disables():
    with pytest.warns(UserWarning, match=r"^CUDA is not available or torch_xla is imported. Disabling autocast.$"):
        ac = torch.autocast("cuda")
    assert ac._enabled is False
    with ac:
        assert not torch.is_autocast_enabled("cuda")


def test_cuda_with_backend(cuda_standin):
    """With a backend serving "cuda", autocast('cuda') is enabled; float16 by default."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autocast("cuda"):
            a = torch.ones(2, 2, device="cuda")
            assert (a @ a).dtype is torch.float16
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is torch.float32    # CPU tensors: not cast


def test_state_functions_and_their_checks():
    torch.set_autocast_enabled("cpu", True)
    assert torch.is_autocast_enabled("cpu") and _mm_dtype() is torch.bfloat16
    torch.set_autocast_dtype("cpu", torch.float16)
    assert _mm_dtype() is torch.float16
    torch.set_autocast_enabled("cpu", False)
    torch.set_autocast_dtype("cpu", torch.bfloat16)
    torch.set_autocast_enabled(True)                    # legacy form: CUDA
    assert torch.is_autocast_enabled() and torch.is_autocast_enabled("cuda")
    torch.set_autocast_enabled(False)
    with pytest.raises(TypeError, match=r"argument 'device_type' \(position 1\) must be str, not int"):
        torch.is_autocast_enabled(3)
    with pytest.raises(TypeError, match=r"argument 'enabled' \(position 2\) must be bool, not int"):
        torch.set_autocast_enabled("cpu", 1)
    with pytest.raises(TypeError, match=r"argument 'dtype' \(position 2\) must be torch.dtype, not int"):
        torch.set_autocast_dtype("cpu", 1)


def test_deprecated_per_device_functions():
    with pytest.warns(DeprecationWarning, match=r"torch.is_autocast_cpu_enabled\(\) is deprecated. Please use "
                                                r"torch.is_autocast_enabled\('cpu'\) instead."):
        assert torch.is_autocast_cpu_enabled() is False
    with pytest.warns(DeprecationWarning):
        assert torch.get_autocast_cpu_dtype() is torch.bfloat16
    with pytest.warns(DeprecationWarning):
        assert torch.get_autocast_gpu_dtype() is torch.float16
    with pytest.warns(DeprecationWarning):
        torch.set_autocast_cpu_enabled(True)
    assert torch.is_autocast_enabled("cpu")
    with pytest.warns(DeprecationWarning):
        torch.set_autocast_cpu_enabled(False)


def test_cache_enabled_flag():
    """cache_enabled=None takes the global setting; the region sets it and restores it."""
    with torch.autocast("cpu", cache_enabled=False) as ac:
        assert ac._cache_enabled is False and torch.is_autocast_cache_enabled() is False
    assert torch.is_autocast_cache_enabled() is True
    torch.set_autocast_cache_enabled(False)
    assert torch.autocast("cpu")._cache_enabled is False
    torch.set_autocast_cache_enabled(True)


def test_per_thread():
    """A new thread starts with autocast off, as in PyTorch."""
    seen = []
    with torch.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append((torch.is_autocast_enabled("cpu"), _mm_dtype())))
        t.start()
        t.join()
        assert _mm_dtype() is torch.bfloat16
    assert seen == [(False, torch.float32)]


def test_deprecated_cpu_amp_autocast():
    """torch.cpu.amp.autocast: PyTorch's FutureWarning, bfloat16 by default."""
    msg = "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead."
    with pytest.warns(FutureWarning) as rec:
        ac = torch.cpu.amp.autocast()
    assert [str(r.message) for r in rec] == [msg]
    assert isinstance(ac, torch.autocast) and ac.fast_dtype is torch.bfloat16
    with ac:
        assert _mm_dtype() is torch.bfloat16
    with pytest.warns(FutureWarning):
        with torch.cpu.amp.autocast(dtype=torch.float16):
            assert _mm_dtype() is torch.float16


def test_deprecated_cuda_amp_autocast_without_cuda():
    """torch.cuda.amp.autocast: the FutureWarning, then (no CUDA here) the disabling UserWarning."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ac = torch.cuda.amp.autocast()
    assert [(r.category, str(r.message)) for r in rec] == [
        (FutureWarning, "`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                        "`torch.amp.autocast('cuda', args...)` instead."),
        (UserWarning, "CUDA is not available or torch_xla is imported. Disabling autocast.")]
    assert ac._enabled is False and ac.fast_dtype is torch.float16


def test_cache_reuses_weight_casts_until_the_region_ends():
    """One cast per weight per region; a weight changed in place is cast again; leaving the
    outermost region empties the cache; two backwards through one cached cast both work."""
    from tensorplug.amp.state import state
    lin = torch.nn.Linear(3, 2)
    x = torch.ones(4, 3)
    with torch.autocast("cpu"):
        y1, y2 = lin(x), lin(x)
        assert len(state.cache) == 2                   # weight and bias
        y1.float().sum().backward()
        y2.float().sum().backward()
        with torch.autocast("cpu"):
            lin(x)
        assert len(state.cache) == 2                   # an inner region keeps the cache
    assert len(state.cache) == 0
    # d/dW of sum(x W^T + b) over 4 rows of ones, twice: 8 everywhere (exact in bfloat16)
    assert lin.weight.grad.dtype is torch.float32
    assert lin.weight.grad.tolist() == [[8.0] * 3] * 2
    w = torch.nn.Parameter(torch.full((2, 2), 1.0))
    with torch.autocast("cpu"):
        a = w @ w
        with torch.no_grad():
            w.add_(1.0)
        b = w @ w
    assert a.tolist() == [[2.0, 2.0]] * 2 and b.tolist() == [[8.0, 8.0]] * 2


def test_cache_disabled_makes_fresh_casts():
    from tensorplug.amp.state import state
    lin = torch.nn.Linear(3, 2)
    with torch.autocast("cpu", cache_enabled=False):
        lin(torch.ones(1, 3))
        assert len(state.cache) == 0


def test_custom_fwd_bwd():
    """custom_fwd(cast_inputs=float32) runs forward in float32 with autocast off; custom_bwd
    replays forward's autocast state (off here) in backward."""
    seen = {}

    class Square(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
        def forward(ctx, x):
            seen["fwd"] = (x.dtype, torch.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = torch.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = torch.tensor([1.5, -2.0], requires_grad=True)
    with torch.autocast("cpu"):
        h = x.to(torch.bfloat16)
        y = Square.apply(h)
        y.sum().backward()
    assert seen == {"fwd": (torch.float32, False), "bwd": False}
    assert y.dtype is torch.float32 and y.tolist() == [2.25, 4.0]
    assert x.grad.tolist() == [3.0, -4.0]
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        torch.amp.custom_fwd(device_type=None)


def test_custom_fwd_without_cast_keeps_autocast():
    seen = []

    class Id(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu")
        def forward(ctx, x):
            seen.append(torch.is_autocast_enabled("cpu"))
            return x.clone()

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")))
            return g

    x = torch.ones(2, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.float16):
        y = Id.apply(x)
    y.sum().backward()                    # outside the region: backward replays forward's state
    assert seen == [True, (True, torch.float16)]
    assert not torch.is_autocast_enabled("cpu")
