"""The engine may take a freshly computed gradient as `.grad` instead of copying it, but only when
nothing else can see that buffer."""
import tensorplug as torch


def test_fresh_gradient_buffer_is_taken_without_copy(monkeypatch):
    """A gradient that only the engine holds becomes .grad as is (no copy)."""
    a = torch.ones(3, requires_grad=True)
    seen = {}
    real_clone = torch.Tensor._clone_data

    def counting_clone(self):
        seen["copies"] = seen.get("copies", 0) + 1
        return real_clone(self)
    monkeypatch.setattr(torch.Tensor, "_clone_data", counting_clone)
    (a * 2).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    assert seen.get("copies", 0) == 0


def test_shared_gradient_is_copied_for_each_leaf():
    """add's backward hands one tensor to both inputs: each leaf must get its own buffer."""
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    (a + b).sum().backward()
    a.grad.add_(1)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]
    assert a.grad.tolist() == [2.0, 2.0, 2.0]


def test_gradient_kept_by_a_hook_is_not_reused():
    """A hook that keeps the gradient must not see later in-place accumulation."""
    kept = []
    c = torch.ones(3, requires_grad=True)
    c.register_hook(lambda g: kept.append(g))
    (c * 2).sum().backward()
    (c * 2).sum().backward()
    assert c.grad.tolist() == [4.0, 4.0, 4.0]
    assert kept[0].tolist() == [2.0, 2.0, 2.0]


def test_view_gradients_are_copied():
    """A gradient that is a view (e.g. an expand of the upstream gradient) is copied, writable."""
    d = torch.ones(2, 3, requires_grad=True)
    d.sum().backward()
    d.grad.add_(1)
    assert d.grad.tolist() == [[2.0] * 3] * 2


def _count_copies(monkeypatch):
    seen = {"copies": 0}
    real_clone = torch.Tensor._clone_data

    def counting_clone(self):
        seen["copies"] += 1
        return real_clone(self)
    monkeypatch.setattr(torch.Tensor, "_clone_data", counting_clone)
    return seen


def test_whole_reshape_of_a_fresh_buffer_is_taken(monkeypatch):
    """conv's weight gradient is its GEMM's (O, C*K) result reshaped to (O, C, kh, kw) (a NumPy view of a
    buffer nothing else holds): taken as .grad without a copy, and later accumulation adds in place."""
    seen = _count_copies(monkeypatch)
    x = torch.randn(2, 8, 4, 4)                     # few output pixels: the GEMM lands in (O, C*K) order
    w = torch.randn(32, 8, 3, 3, requires_grad=True)
    torch.nn.functional.conv2d(x, w).sum().backward()
    assert seen["copies"] == 0
    first = w.grad.clone()
    torch.nn.functional.conv2d(x, w).sum().backward()
    assert torch.allclose(w.grad, 2 * first)


def test_reshape_of_a_buffer_someone_else_sees_is_copied(monkeypatch):
    """A gradient whose data is a reshape of an array that the user still holds (here through a hook that
    returns a reshaped view of its own kept array) is copied: the user's array never changes."""
    import numpy as np
    keep = np.arange(6, dtype=np.float32)
    a = torch.zeros(2, 3, requires_grad=True)
    a.register_hook(lambda g: torch.from_numpy(keep.reshape(2, 3)))     # a view of keep, as a tensor of its own
    seen = _count_copies(monkeypatch)
    (a * 1).sum().backward()
    (a * 1).sum().backward()
    assert seen["copies"] == 1
    assert keep.tolist() == [0, 1, 2, 3, 4, 5]
    assert a.grad.tolist() == [[0, 2, 4], [6, 8, 10]]
