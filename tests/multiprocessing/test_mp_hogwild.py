"""Hogwild: several processes train one shared model without locks; the parent sees their updates."""
import numpy as np
import pytest

import tensorplug as tp
import tensorplug.multiprocessing as mp
from tensorplug import nn

pytestmark = pytest.mark.timeout(60)
W_TRUE = np.array([[1.5, -2.0, 0.5]])


def _data(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 3))
    return tp.tensor(x, dtype=tp.float32), tp.tensor(x @ W_TRUE.T + 0.25, dtype=tp.float32)


def _train(rank, model, steps):
    x, y = _data(rank + 1)
    opt = tp.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def _loss(model):
    x, y = _data(0)
    with tp.no_grad():
        return nn.functional.mse_loss(model(x), y).item()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_children_train_the_shared_model(method):
    tp.manual_seed(0)
    model = nn.Linear(3, 1)
    model.share_memory()
    w0 = model.weight.detach().numpy().copy()
    before = _loss(model)
    mp.start_processes(_train, args=(model, 100), nprocs=2, start_method=method)
    after = _loss(model)
    assert after < 1e-3 * before                                  # trained, only by the children
    np.testing.assert_allclose(model.weight.detach().numpy(), W_TRUE, atol=1e-2)
    np.testing.assert_allclose(model.bias.detach().numpy(), [0.25], atol=1e-2)
    assert not np.allclose(model.weight.detach().numpy(), w0)
