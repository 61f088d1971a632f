"""Dropout: fraction zeroed ~ p, survivors scaled by 1/(1-p), identity in eval, channel-wise masks,
alpha dropout preserving mean and variance of standard normal input, gradients through the mask,
in-place variants, seeding, module train/eval behaviour and reprs."""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    """About a fraction p of the elements is zeroed; the rest are scaled by exactly 1/(1-p)."""
    torch.manual_seed(0)
    y = f64(F.dropout(torch.ones(20000, dtype=torch.float64), p=p))
    zero = y == 0
    assert abs(zero.mean() - p) < 0.015
    np.testing.assert_allclose(y[~zero], 1 / (1 - p), rtol=1e-12)
    assert abs(y.mean() - 1) < 0.05


def test_dropout_eval_and_edge_probabilities():
    """training=False and p=0 return the input itself; p=1 zeroes everything; p outside [0, 1] raises."""
    x = torch.randn(10)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert f64(F.dropout(x, 1.0)).tolist() == [0.0] * 10
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(-0.1)


def test_dropout_is_seeded():
    torch.manual_seed(3)
    a = F.dropout(torch.ones(50))
    torch.manual_seed(3)
    b = F.dropout(torch.ones(50))
    assert a.tolist() == b.tolist()


def test_dropout_gradient_uses_the_mask():
    """The gradient is the mask scaled by 1/(1-p); gradcheck and gradgradcheck through a fixed mask."""
    x = torch.randn(200, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(1)
    y = F.dropout(x, 0.25)
    y.sum().backward()
    np.testing.assert_allclose(f64(x.grad), f64(y) / f64(x), rtol=1e-12)

    def fn(t):
        torch.manual_seed(7)            # the same mask at every evaluation
        return F.dropout(t, 0.4)
    xs = torch.randn(6, dtype=torch.float64, requires_grad=True)
    assert gradcheck(fn, (xs,)) and gradgradcheck(fn, (xs,))


def test_dropout_inplace():
    x = torch.ones(100)
    torch.manual_seed(2)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x
    assert set(f64(x).tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("fn, shape, channel_dims", [
    (F.dropout1d, (4, 50, 7), 2), (F.dropout1d, (50, 7), 1),
    (F.dropout2d, (4, 50, 3, 3), 2),
    (F.dropout3d, (2, 50, 2, 2, 2), 2), (F.dropout3d, (50, 2, 2, 2), 1)])
def test_channel_dropout_zeroes_whole_channels(fn, shape, channel_dims):
    """dropout1d/2d/3d draw one mask value per channel (batched and unbatched inputs)."""
    torch.manual_seed(4)
    y = f64(fn(torch.ones(*shape), 0.5))
    per_channel = y.reshape(int(np.prod(shape[:channel_dims])), -1)
    assert ((per_channel == 0).all(1) | (per_channel == 2).all(1)).all()
    frac = (per_channel[:, 0] == 0).mean()
    assert 0.25 < frac < 0.75
    assert fn(torch.ones(*shape), 0.5, training=False).tolist() == torch.ones(*shape).tolist()


def test_dropout2d_3d_input_warns_and_drops_channels():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y = f64(F.dropout2d(torch.ones(2, 30, 4), 0.5))
    assert ((y == 0).all(2) | (y == 2).all(2)).all()


def test_dropout1d_rejects_4d():
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(torch.ones(1, 2, 3, 4))


def test_alpha_dropout_keeps_mean_and_variance():
    """For standard normal input, alpha dropout keeps mean ~0 and variance ~1; dropped elements
    all take one value (a * -alpha' + b); eval (the default) is the identity."""
    torch.manual_seed(5)
    x = torch.randn(200000, dtype=torch.float64)
    for p in (0.2, 0.5):
        y = f64(F.alpha_dropout(x, p, training=True))
        assert abs(y.mean()) < 0.02 and abs(y.var() - 1) < 0.03
        _, counts = np.unique(y, return_counts=True)
        assert abs(counts.max() / y.size - p) < 0.01          # the dropped value, repeated
    assert F.alpha_dropout(x, 0.5) is x
    assert F.alpha_dropout(x, 0.5, training=False) is x


def test_alpha_dropout_affine_map():
    """Kept: a * x + b; dropped: -alpha' * a + b with a = ((1 - p)(1 + p alpha'^2))^-1/2, b = alpha' a p."""
    alpha = 1.7580993408473766
    p = 0.3
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    b = alpha * a * p
    x = torch.linspace(-2, 2, 500, dtype=torch.float64)
    torch.manual_seed(6)
    y = f64(F.alpha_dropout(x, p, training=True))
    kept = np.isclose(y, a * f64(x) + b)
    dropped = np.isclose(y, -alpha * a + b)
    assert (kept | dropped).all()
    assert 0.2 < dropped.mean() < 0.4


def test_feature_alpha_dropout_channelwise():
    torch.manual_seed(8)
    x = torch.randn(4, 40, 5, dtype=torch.float64)
    y = f64(F.feature_alpha_dropout(x, 0.5, training=True))
    alpha = 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * 0.5 + 1) * 0.5)
    dropped_value = -alpha * a + alpha * a * 0.5
    chan_dropped = np.isclose(y, dropped_value).all(2)
    chan_kept = np.isclose(y, a * f64(x) + alpha * a * 0.5).all(2)
    assert (chan_dropped | chan_kept).all() and 0.25 < chan_dropped.mean() < 0.75


@pytest.mark.parametrize("cls", [nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
                                 nn.FeatureAlphaDropout])
def test_modules_train_and_eval(cls):
    """Layers drop in training mode and are the identity in eval mode."""
    m = cls(0.5)
    x = torch.randn(4, 6, 3, 3, 3) if cls is nn.Dropout3d else torch.randn(4, 6, 3, 3) \
        if cls is nn.Dropout2d else torch.randn(4, 6, 5)
    torch.manual_seed(9)
    assert m.training
    assert not np.allclose(f64(m(x)), f64(x))
    m.eval()
    assert m(x) is x


@pytest.mark.parametrize("m, text", [
    (nn.Dropout(), "Dropout(p=0.5, inplace=False)"), (nn.Dropout1d(0.1), "Dropout1d(p=0.1, inplace=False)"),
    (nn.Dropout2d(0.3, inplace=True), "Dropout2d(p=0.3, inplace=True)"),
    (nn.Dropout3d(), "Dropout3d(p=0.5, inplace=False)"), (nn.AlphaDropout(0.2), "AlphaDropout(p=0.2, inplace=False)"),
    (nn.FeatureAlphaDropout(), "FeatureAlphaDropout(p=0.5, inplace=False)")])
def test_reprs(m, text):
    assert repr(m) == text
