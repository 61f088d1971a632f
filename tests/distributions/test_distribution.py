"""The Distribution base class, ExponentialFamily and distributions.utils."""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import (Bernoulli, Categorical, Distribution, Exponential, ExponentialFamily,
                                      Normal, constraints)
from tensorplug.distributions.utils import (broadcast_all, clamp_probs, lazy_property, logits_to_probs,
                                            probs_to_logits, tril_matrix_to_vec, vec_to_tril_matrix)

from ._helpers import close, t64


def test_shapes_of_samples_and_log_prob():
    """sample_shape + batch_shape + event_shape; log_prob reduces the event dims."""
    d = Normal(tp.zeros(2, 3), 1.0)
    assert d.batch_shape == tp.Size([2, 3]) and d.event_shape == tp.Size([])
    assert d.sample().shape == (2, 3)
    assert d.sample((4, 5)).shape == (4, 5, 2, 3)
    assert d._extended_shape((7,)) == tp.Size([7, 2, 3])
    assert d.log_prob(tp.zeros(4, 1, 3)).shape == (4, 2, 3)


def test_scalar_parameters_give_empty_batch_and_default_dtype():
    """Python numbers: batch_shape () and float32; numbers follow a tensor's dtype."""
    d = Normal(0.0, 1.0)
    assert d.batch_shape == tp.Size([]) and d.loc.dtype == tp.float32
    assert Normal(0.0, tp.ones(2, dtype=tp.float64)).loc.dtype == tp.float64


def test_broadcast_all():
    """broadcast_all broadcasts tensors and numbers together and rejects other types."""
    a, b = broadcast_all(tp.zeros(3, 1, dtype=tp.float64), 2.0)
    assert a.shape == b.shape == (3, 1) and b.dtype == tp.float64 and float(b[0, 0]) == 2.0
    a, b = broadcast_all(tp.zeros(3, 1), tp.zeros(4))
    assert a.shape == b.shape == (3, 4)
    with pytest.raises(ValueError, match="Input arguments must all be instances of numbers.Number"):
        broadcast_all([1.0], 2.0)


def test_probs_logits_round_trip():
    """probs_to_logits / logits_to_probs are inverse (binary: log-odds; else log-softmax)."""
    p = np.array([0.1, 0.5, 0.9])
    close(probs_to_logits(t64(p), is_binary=True), np.log(p / (1 - p)), rtol=1e-12)
    close(logits_to_probs(t64(np.log(p / (1 - p))), is_binary=True), p, rtol=1e-12)
    q = p / p.sum()
    close(logits_to_probs(probs_to_logits(t64(q))), q, rtol=1e-12)
    eps = np.finfo(np.float64).eps
    close(clamp_probs(t64([0.0, 1.0, 0.3])), [eps, 1 - eps, 0.3], rtol=0, atol=0)


def test_lazy_property_is_computed_once_and_cached():
    """A lazy_property runs once, is stored on the instance, and looks like a property on the class."""
    calls = []

    class A:
        @lazy_property
        def x(self):
            calls.append(1)
            return 3

    a = A()
    assert a.x == 3 and a.x == 3 and calls == [1] and "x" in a.__dict__
    assert isinstance(A.x, property)


def test_lazy_property_keeps_graph_under_no_grad():
    """A lazily derived parameter carries gradient even when first read under no_grad."""
    p = tp.tensor([0.3], requires_grad=True)
    d = Bernoulli(probs=p)
    with tp.no_grad():
        logits = d.logits
    assert logits.requires_grad


def test_tril_vec_round_trip():
    """tril_matrix_to_vec and vec_to_tril_matrix invert each other, for any diag offset."""
    m = np.arange(2 * 16, dtype=np.float64).reshape(2, 4, 4)
    for diag in (-2, -1, 0, 1):
        v = tril_matrix_to_vec(t64(m), diag)
        rows, cols = np.tril_indices(4, diag)
        close(v, m[:, rows, cols], rtol=0)
        back = vec_to_tril_matrix(v, diag)
        close(back, np.tril(m, diag), rtol=0)
    with pytest.raises(ValueError, match=r"diag \(4\) provided is outside \[-4, 3\]"):
        tril_matrix_to_vec(t64(m), 4)
    with pytest.raises(ValueError, match="cannot be expressed as the lower triangular part"):
        vec_to_tril_matrix(t64(np.zeros(4)))


def test_vec_to_tril_matrix_gradient():
    """vec_to_tril_matrix passes gradients back to the vector."""
    v = t64(np.arange(1.0, 7.0)).requires_grad_()
    assert tp.autograd.gradcheck(lambda v: vec_to_tril_matrix(v) * 2.0, (v,))


def test_validation_error_for_bad_parameter():
    """Invalid parameters raise PyTorch's ValueError naming parameter, distribution and constraint."""
    with pytest.raises(ValueError) as e:
        Normal(tp.tensor([0.0, 1.0]), tp.tensor([1.0, -1.0]))
    msg = str(e.value)
    assert msg.startswith("Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: ")
    assert "to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\n" in msg
    Normal(tp.tensor([0.0]), tp.tensor([-1.0]), validate_args=False)  # no check when turned off


def test_validation_errors_for_values():
    """log_prob checks type, event shape, broadcastability and support, with PyTorch's messages."""
    d = Exponential(tp.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="^The value argument to log_prob must be a Tensor$"):
        d.log_prob([1.0, 1.0])
    with pytest.raises(ValueError, match=r"Value is not broadcastable with batch_shape\+event_shape: "):
        d.log_prob(tp.zeros(3))
    with pytest.raises(ValueError) as e:
        d.log_prob(tp.tensor([-1.0, 1.0]))
    assert str(e.value).startswith("Expected value argument (Tensor of shape (2,)) to be within the support "
                                   "(GreaterThanEq(lower_bound=0.0)) of the distribution Exponential(rate: ")
    c = Categorical(tp.ones(2, 3))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        from tensorplug.distributions import OneHotCategorical
        OneHotCategorical(tp.ones(2, 3)).log_prob(tp.ones(2, 2))
    assert c.log_prob(tp.tensor([0, 2])).shape == (2,)


def test_set_default_validate_args():
    """set_default_validate_args turns validation off for new distributions and back on."""
    try:
        Distribution.set_default_validate_args(False)
        Normal(0.0, -1.0)  # accepted
    finally:
        Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args("yes")


def test_either_probs_or_logits():
    """Exactly one of probs / logits."""
    for args in ({}, {"probs": 0.3, "logits": 0.1}):
        with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both.$"):
            Bernoulli(**args)


def test_base_class_raises_not_implemented():
    """The abstract methods raise NotImplementedError (mean etc. naming the class)."""
    d = Distribution(validate_args=False)
    for name in ("rsample", "entropy", "enumerate_support"):
        with pytest.raises(NotImplementedError):
            getattr(d, name)()
    with pytest.raises(NotImplementedError, match="does not implement mean"):
        d.mean
    with pytest.raises(NotImplementedError, match="does not implement variance"):
        d.stddev
    with pytest.raises(NotImplementedError):
        d.log_prob(tp.zeros(1))
    with pytest.warns(UserWarning, match="does not define `arg_constraints`"):
        Distribution()


def test_sample_n_warns_and_samples():
    """sample_n(n) is sample((n,)) with a FutureWarning."""
    d = Normal(tp.zeros(3), 1.0)
    with pytest.warns(FutureWarning, match=r"`sample_n\(n\)` will be deprecated"):
        assert d.sample_n(4).shape == (4, 3)


def test_sample_has_no_grad_rsample_has():
    """sample() is detached; rsample() carries the graph."""
    loc = tp.zeros(2, requires_grad=True)
    d = Normal(loc, 1.0)
    assert not d.sample().requires_grad and d.rsample().requires_grad


def test_expand_and_checked_instance():
    """expand gives expanded views and keeps validation; a subclass with its own __init__ must
    define its own expand."""
    d = Normal(tp.zeros(3), tp.ones(3))
    e = d.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.loc.shape == (2, 3) and isinstance(e, Normal)
    assert e._validate_args == d._validate_args

    class MyNormal(Normal):
        def __init__(self, scale):
            super().__init__(0.0, scale)

    with pytest.raises(NotImplementedError, match="Subclass MyNormal of Normal that defines a custom __init__"):
        MyNormal(tp.ones(2)).expand((3, 2))


def test_perplexity_and_stddev():
    """perplexity = exp(entropy); stddev = sqrt(variance) by default."""
    d = Exponential(t64([0.5, 2.0]))
    close(d.perplexity(), np.exp(stats.expon(scale=[2.0, 0.5]).entropy()), rtol=1e-12)
    close(Distribution.stddev.fget(d), [2.0, 0.5], rtol=1e-12)


def test_exponential_family_entropy_is_bregman():
    """ExponentialFamily.entropy (the generic one) matches the closed forms, and is differentiable."""
    loc, scale = t64([0.3, -1.0]), t64([0.5, 2.0]).requires_grad_()
    d = Normal(loc, scale)
    generic = ExponentialFamily.entropy(d)
    close(generic, stats.norm([0.3, -1.0], [0.5, 2.0]).entropy(), rtol=1e-12)
    g, = tp.autograd.grad(generic.sum(), scale)
    close(g, 1 / np.array([0.5, 2.0]), rtol=1e-10)
    r = t64([0.5, 3.0])
    close(ExponentialFamily.entropy(Exponential(r)), stats.expon(scale=1 / np.array([0.5, 3.0])).entropy())


def test_repr():
    """repr lists the parameters set at construction (a value when scalar, the shape otherwise)."""
    assert repr(Normal(tp.zeros(2), 1.0)) == f"Normal(loc: {tp.Size([2])}, scale: {tp.Size([2])})"
    assert repr(Bernoulli(0.5)) == "Bernoulli(probs: 0.5)"
