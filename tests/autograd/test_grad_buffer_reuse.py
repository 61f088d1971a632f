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
