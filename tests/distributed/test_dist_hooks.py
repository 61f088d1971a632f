"""The autograd support DistributedDataParallel builds on (single process): post-accumulate-grad
hooks on leaves and final callbacks queued during backward."""
import pytest

import tensorplug as torch
from tensorplug.autograd.engine import queue_callback


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (w * 3).sum().backward()
    (w * w).sum().backward()
    assert seen == [[3.0, 3.0], [5.0, 7.0]]
    h.remove()
    (w * 1).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_runs_once_per_backward_and_may_edit_grad():
    w = torch.tensor([1.0], requires_grad=True)
    calls = []

    def halve(p):
        calls.append(1)
        p.grad.mul_(0.5)
    w.register_post_accumulate_grad_hook(halve)
    (w * 2 + w * 4).sum().backward()           # two paths into w: one accumulation
    assert calls == [1] and w.grad.tolist() == [3.0]
    (w * 2).sum().backward(inputs=[w])         # backward(inputs=...) accumulates too
    assert len(calls) == 2 and w.grad.tolist() == [2.5]     # (3 + 2) / 2


def test_post_accumulate_grad_hook_not_for_autograd_grad_or_non_leaves():
    w = torch.tensor([1.0], requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    torch.autograd.grad((w * 2).sum(), w)
    assert calls == [] and w.grad is None
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(1).register_post_accumulate_grad_hook(lambda p: None)


def test_queue_callback_runs_after_the_whole_graph():
    a = torch.tensor([1.0], requires_grad=True)
    b = torch.tensor([2.0], requires_grad=True)
    order = []

    def on_a(p):
        order.append("a")
        queue_callback(lambda: order.append(("end", a.grad.item(), b.grad.item())))
        queue_callback(lambda: queue_callback(lambda: order.append("nested")))
    a.register_post_accumulate_grad_hook(on_a)
    b.register_post_accumulate_grad_hook(lambda p: order.append("b"))
    (a * b).sum().backward()
    assert sorted(order[:2]) == ["a", "b"] and order[2:] == [("end", 2.0, 1.0), "nested"]
    order.clear()
    (a * b).sum().backward()                   # callbacks do not carry over to the next backward
    assert order.count(("end", 4.0, 2.0)) == 1


def test_queue_callback_only_during_backward_and_with_autograd_grad():
    with pytest.raises(RuntimeError, match="during backward"):
        queue_callback(lambda: None)
    x = torch.tensor([1.0], requires_grad=True)
    ran = []
    y = x * 2
    y.register_hook(lambda g: queue_callback(lambda: ran.append(1)))
    torch.autograd.grad(y.sum(), x)
    assert ran == [1]


def test_a_failing_backward_leaves_no_callback_behind():
    x = torch.tensor([1.0], requires_grad=True)
    ran = []

    def boom(g):
        queue_callback(lambda: ran.append(1))
        raise ValueError("boom")
    y = x * 2
    y.register_hook(boom)
    with pytest.raises(ValueError):
        y.sum().backward()
    (x * 2).sum().backward()
    assert ran == []
    with pytest.raises(RuntimeError, match="during backward"):
        queue_callback(lambda: None)
