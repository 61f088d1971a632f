"""no_grad / enable_grad / set_grad_enabled / inference_mode as context managers and decorators."""
import threading

import pytest

import tensorplug as torch


def leaf():
    return torch.ones(2, requires_grad=True)


def test_no_grad_context_stops_recording():
    x = leaf()
    with torch.no_grad():
        y = x * 2
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert (x * 2).requires_grad


def test_nested_modes_restore_in_order():
    x = leaf()
    with torch.no_grad():
        with torch.enable_grad():
            assert torch.is_grad_enabled()
            assert (x * 2).requires_grad
            with torch.no_grad():
                assert not (x * 2).requires_grad
            assert torch.is_grad_enabled()
        assert not torch.is_grad_enabled()
        with torch.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()


def test_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with torch.no_grad():
            raise ValueError
    assert torch.is_grad_enabled()


def test_decorators_with_and_without_parentheses():
    x = leaf()

    @torch.no_grad()
    def f1():
        return x * 2

    @torch.no_grad
    def f2():
        return x * 2

    @torch.enable_grad()
    def g1():
        return x * 2

    @torch.enable_grad
    def g2():
        return x * 2

    @torch.set_grad_enabled(False)
    def h():
        return x * 2

    assert torch.is_grad_enabled()             # decorating does not change the mode
    assert not f1().requires_grad and not f2().requires_grad and not h().requires_grad
    assert f1.__name__ == "f1"
    with torch.no_grad():
        assert g1().requires_grad and g2().requires_grad
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()


def test_decorated_function_nested_inside_other_mode():
    x = leaf()

    @torch.no_grad()
    def inner():
        assert not torch.is_grad_enabled()
        return x * 2

    @torch.enable_grad()
    def outer():
        y = inner()
        assert torch.is_grad_enabled()
        return y, x * 2

    with torch.no_grad():
        a, b = outer()
    assert not a.requires_grad and b.requires_grad


def test_set_grad_enabled_as_plain_call_and_context():
    x = leaf()
    try:
        torch.set_grad_enabled(False)
        assert not torch.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()
    is_train = False
    with torch.set_grad_enabled(is_train):
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()


def test_no_grad_instance_is_reusable_and_reentrant():
    ng = torch.no_grad()
    with ng:
        with torch.enable_grad():
            with ng:
                assert not torch.is_grad_enabled()
            assert torch.is_grad_enabled()
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()


def test_generator_keeps_mode_while_it_runs():
    x = leaf()

    @torch.no_grad()
    def gen():
        for _ in range(2):
            yield (x * 2).requires_grad

    it = gen()
    assert next(it) is False
    assert torch.is_grad_enabled() and (x * 2).requires_grad   # mode restored between items
    assert next(it) is False


def test_inference_mode():
    x = leaf()
    with torch.inference_mode():
        assert not (x * 2).requires_grad
    with torch.inference_mode(False):
        assert (x * 2).requires_grad

    @torch.inference_mode()
    def f():
        return x * 2
    assert not f().requires_grad


def test_grad_mode_is_per_thread():
    seen = {}

    def worker():
        seen["enabled"] = torch.is_grad_enabled()
        seen["rg"] = (leaf() * 2).requires_grad

    with torch.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == {"enabled": True, "rg": True}


def test_autograd_namespace_exports_the_modes():
    assert torch.autograd.no_grad is torch.no_grad
    assert torch.autograd.enable_grad is torch.enable_grad
    assert torch.autograd.set_grad_enabled is torch.set_grad_enabled
    assert torch.autograd.is_grad_enabled() is True
