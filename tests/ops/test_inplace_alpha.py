"""add_ / sub_ with alpha (an SGD step's p.add_(grad, alpha=-lr)): one in-place pass of alpha * other into
self. Values against float64, broadcasting, the dtype rules of the out-of-place op, the version counter,
and the autograd cases that keep the recorded path."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp

rng = np.random.default_rng(2)


@pytest.mark.parametrize("op", ["add_", "sub_"])
@pytest.mark.parametrize("alpha", [-20.0, 0.5, 1, 3])
@pytest.mark.parametrize("oshape", [(40, 30), (30,), (1, 30)])
def test_values_in_place(op, alpha, oshape):
    pn = rng.standard_normal((40, 30)).astype(np.float32)
    on = rng.standard_normal(oshape).astype(np.float32)
    p = tp.tensor(pn)
    data_before, version = p._data, p._version
    r = getattr(p, op)(tp.tensor(on), alpha=alpha)
    sign = 1 if op == "add_" else -1
    want = pn.astype(np.float64) + sign * alpha * on.astype(np.float64)
    assert r is p and p._data is data_before and p._version > version
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-6, atol=1e-6)


def test_dtype_rules_as_out_of_place():
    i = tp.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(tp.tensor([1, 1, 1]), alpha=0.5)
    i.add_(tp.tensor([1, 1, 1]), alpha=2)
    assert i.tolist() == [3, 4, 5] and i.dtype == tp.int64
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tp.zeros(3).add_(tp.ones(2, 3), alpha=2)


def test_autograd_cases_are_recorded():
    """other requiring grad (or self) under grad mode: the recorded path, gradients alpha * g."""
    w = tp.tensor(rng.standard_normal(5).astype(np.float64), requires_grad=True)
    base = tp.zeros(5, dtype=tp.float64)
    base.add_(w, alpha=-3.0)
    base.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(5, -3.0))
    before = w.detach().numpy().copy()
    with tp.no_grad():                                  # a leaf requiring grad, updated under no_grad
        w.sub_(w.grad, alpha=0.1)
    np.testing.assert_allclose(w.detach().numpy(), before + 0.3)
    assert w.requires_grad and w.grad_fn is None
