"""tensorplug.utils.backcompat: PyTorch 0.2's broadcast and keepdim warnings (off by default), the
deprecated 1-d pointwise fallback, and the modern behaviour when the switches are off."""
import warnings

import numpy as np
import pytest

import tensorplug as torch
from tensorplug.autograd import gradcheck

bc = torch.utils.backcompat
FALLBACK = ("self and other not broadcastable, but have the same number of elements.  Falling back to "
            "deprecated pointwise behavior.")
SAME_NUMEL = ("self and other do not have the same shape, but are broadcastable, and have the same number "
              "of elements.")


def keepdim_text(name):
    return (f'backwards compatibility: call to "{name}" uses default value for keepdim which has changed '
            'default to False.  Consider passing as kwarg.')


@pytest.fixture(autouse=True)
def _switches_off():
    yield
    bc.broadcast_warning.enabled = False
    bc.keepdim_warning.enabled = False


def recorded(fn):
    """(fn's result, [(category, message, filename)] of the warnings it emitted)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(x.category, str(x.message), x.filename) for x in w]


def test_switches_default_off_and_take_bools_only():
    """Both switches read False first; a non-bool is PyTorch's RuntimeError and changes nothing."""
    assert bc.broadcast_warning.enabled is False and bc.keepdim_warning.enabled is False
    with pytest.raises(RuntimeError, match="^set_backcompat_broadcast_warn expects a bool, but got int$"):
        bc.broadcast_warning.enabled = 1
    with pytest.raises(RuntimeError, match="^set_backcompat_keepdim_warn expects a bool, but got str$"):
        bc.keepdim_warning.enabled = "yes"
    bc.broadcast_warning.enabled = True
    bc.keepdim_warning.enabled = True
    assert bc.broadcast_warning.enabled is True and bc.keepdim_warning.enabled is True
    assert isinstance(bc.broadcast_warning, bc.Warning)


def test_off_the_modern_error_and_no_warning():
    """Off: non-broadcastable shapes raise the broadcasting RuntimeError (function and operator), and a
    broadcast of equal element counts is silent."""
    for op in (lambda: torch.add(torch.ones(4), torch.ones(2, 2)), lambda: torch.ones(4) * torch.ones(2, 2)):
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            op()
    r, w = recorded(lambda: torch.add(torch.ones(4, 1), torch.ones(4)))
    assert tuple(r.shape) == (4, 4) and w == []


def test_fallback_of_the_release_notes_example():
    """torch.add(torch.ones(4), torch.ones(2, 2)) gives 2, 2, 2, 2 (size 4) with the quoted warning,
    attributed to the caller's line."""
    bc.broadcast_warning.enabled = True
    r, w = recorded(lambda: torch.add(torch.ones(4), torch.ones(2, 2)))
    assert tuple(r.shape) == (4,) and r.tolist() == [2.0, 2.0, 2.0, 2.0]
    assert w == [(UserWarning, FALLBACK, __file__)]


@pytest.mark.parametrize("shapes", [((4,), (2, 2)), ((2, 3), (6,)), ((2, 3), (3, 2)), ((1, 6), (2, 3))])
def test_fallback_values_are_flat_pointwise(shapes):
    """The result has the first operand's shape and the values of the flat elementwise op (float64
    NumPy reference), for the function, the operator and a mixed-dtype pair."""
    bc.broadcast_warning.enabled = True
    sa, sb = shapes
    a = np.arange(1.0, 7.0 if np.prod(sa) == 6 else 5.0).reshape(sa)
    b = (np.arange(a.size, dtype=np.float64)[::-1] + 0.5).reshape(sb)
    for got, ref in ((lambda: torch.sub(torch.tensor(a), torch.tensor(b)), a.ravel() - b.ravel()),
                     (lambda: torch.tensor(a) * torch.tensor(b), a.ravel() * b.ravel()),
                     (lambda: torch.tensor(a.astype(np.int64)) + torch.tensor(b, dtype=torch.float32),
                      a.ravel().astype(np.int64) + b.ravel().astype(np.float32))):
        r, w = recorded(got)
        assert tuple(r.shape) == sa
        np.testing.assert_allclose(r.numpy().ravel(), ref, rtol=1e-6)
        assert w == [(UserWarning, FALLBACK, __file__)]
    r, _ = recorded(lambda: torch.tensor(a.astype(np.int64)).add(torch.tensor(b, dtype=torch.float32)))
    assert r.dtype is torch.float32


def test_fallback_needs_equal_element_counts():
    """With the switch on, operands of different element counts still raise (and do not warn)."""
    bc.broadcast_warning.enabled = True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            torch.ones(4) + torch.ones(3, 2)


def test_fallback_gradients():
    """Gradients flow through a fallback op to both operands in their own shapes (finite differences)."""
    bc.broadcast_warning.enabled = True
    x = torch.tensor(np.linspace(-1, 1, 6), dtype=torch.float64, requires_grad=True)
    y = torch.tensor(np.linspace(0.5, 2, 6).reshape(2, 3), dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda a, b: a * b + a / b, (x, y))
        assert gradcheck(lambda a, b: a * b, (y, x))
        (x * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy().ravel())
    np.testing.assert_allclose(y.grad.numpy(), x.detach().numpy().reshape(2, 3))


def test_broadcast_of_equal_element_counts_warns():
    """Broadcastable, different shapes, same element count: the second quoted warning, the modern
    broadcast result (NumPy reference); different element counts or equal shapes stay silent."""
    bc.broadcast_warning.enabled = True
    a, b = np.arange(4.0).reshape(4, 1), np.arange(4.0) * 10
    for _ in range(2):                      # every time, not only for the first (cached) shapes
        r, w = recorded(lambda: torch.add(torch.tensor(a), torch.tensor(b)))
        np.testing.assert_array_equal(r.numpy(), a + b)
        assert w == [(UserWarning, SAME_NUMEL, __file__)]
    r, w = recorded(lambda: torch.tensor(a) - torch.tensor(b))
    np.testing.assert_array_equal(r.numpy(), a - b)
    assert w == [(UserWarning, SAME_NUMEL, __file__)]
    for quiet in (lambda: torch.ones(3, 1) + torch.ones(4), lambda: torch.ones(2, 2) + torch.ones(2, 2),
                  lambda: torch.ones(2, 2) + 1.0, lambda: torch.ones(()) + torch.ones(1)):
        assert recorded(quiet)[1] == []


def test_broadcast_cache_resumes_after_switching_off():
    """Switched off again, broadcasts are silent and cached again."""
    from tensorplug.ops import _core
    bc.broadcast_warning.enabled = True
    recorded(lambda: torch.ones(5, 1) + torch.ones(5))
    assert ((5, 1), (5,)) not in _core._bcast_cache
    bc.broadcast_warning.enabled = False
    assert recorded(lambda: torch.ones(5, 1) + torch.ones(5))[1] == []
    assert _core._bcast_cache[((5, 1), (5,))] == (5, 5)


@pytest.mark.parametrize("name, call", [
    ("sum", lambda x: torch.sum(x, 1)), ("sum", lambda x: x.sum(dim=0)), ("mean", lambda x: x.mean(1)),
    ("prod", lambda x: x.prod(1)), ("max", lambda x: x.max(1)), ("min", lambda x: torch.min(x, 0)),
    ("median", lambda x: x.median(1)), ("mode", lambda x: x.mode(1)), ("mode", lambda x: x.mode()),
    ("kthvalue", lambda x: x.kthvalue(1, 1)), ("var", lambda x: x.var(1)), ("std", lambda x: x.std(1)),
    ("norm", lambda x: x.norm(2, 1)),
])
def test_keepdim_warning_names_the_function(name, call):
    """A reduction over a dim without keepdim warns with the quoted text naming it; the result is
    keepdim=False's (the same as with the switch off)."""
    x = torch.tensor(np.arange(6.0).reshape(2, 3) % 4)
    expected, w = recorded(lambda: call(x))
    assert w == []
    bc.keepdim_warning.enabled = True
    got, w = recorded(lambda: call(x))
    assert w == [(UserWarning, keepdim_text(name), __file__)]
    first = lambda r: r[0] if isinstance(r, tuple) else r  # noqa: E731
    assert first(got).tolist() == first(expected).tolist() and first(got).shape == first(expected).shape


def test_keepdim_warning_quiet_cases():
    """No warning when keepdim is given (True or False), for full reductions, var(x, True) (unbiased),
    and max(x, other)."""
    bc.keepdim_warning.enabled = True
    x = torch.ones(2, 3)
    for call in (lambda: x.sum(1, keepdim=False), lambda: x.sum(1, True), lambda: x.sum(), lambda: x.mean(),
                 lambda: x.max(), lambda: torch.var(x, True), lambda: torch.max(x, torch.zeros(2, 3)),
                 lambda: x.amax(1), lambda: x.norm()):
        assert recorded(call)[1] == []
    assert tuple(x.sum(1, keepdim=True).shape) == (2, 1)
