"""tensorplug.distributions.constraints: each constraint's check against exact expected answers."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import constraints as C


def _b(t):
    return t.numpy().tolist()


def test_scalar_constraints_exact():
    x = tp.tensor([-1.0, 0.0, 0.5, 1.0, 2.0, float("nan")])
    assert _b(C.real.check(x)) == [True] * 5 + [False]
    assert _b(C.positive.check(x)) == [False, False, True, True, True, False]
    assert _b(C.nonnegative.check(x)) == [False, True, True, True, True, False]
    assert _b(C.unit_interval.check(x)) == [False, True, True, True, False, False]
    assert _b(C.half_open_interval(0., 1.).check(x)) == [False, True, True, False, False, False]
    assert _b(C.greater_than(0.5).check(x)) == [False, False, False, True, True, False]
    assert _b(C.greater_than_eq(0.5).check(x)) == [False, False, True, True, True, False]
    assert _b(C.less_than(0.5).check(x)) == [True, True, False, False, False, False]
    assert _b(C.boolean.check(x)) == [False, True, False, True, False, False]
    assert _b(C.nonnegative_integer.check(x)) == [False, True, False, True, True, False]
    assert _b(C.positive_integer.check(x)) == [False, False, False, True, True, False]
    assert _b(C.integer_interval(0, 1).check(x)) == [False, True, False, True, False, False]


def test_event_constraints_exact():
    assert _b(C.simplex.check(tp.tensor([[0.3, 0.7], [0.5, 0.6], [-0.1, 1.1]]))) == [True, False, False]
    assert _b(C.one_hot.check(tp.tensor([[0., 1.], [1., 1.], [0., 0.]]))) == [True, False, False]
    assert _b(C.multinomial(3).check(tp.tensor([[1., 2.], [2., 2.]]))) == [True, False]
    assert _b(C.real_vector.check(tp.tensor([[1., 2.], [1., float("nan")]]))) == [True, False]
    ind = C.independent(C.positive, 1)
    assert ind.event_dim == 1 and _b(ind.check(tp.tensor([[1., 2.], [1., -2.]]))) == [True, False]
    with pytest.raises(ValueError, match="Expected value.dim"):
        C.independent(C.positive, 2).check(tp.tensor([1.]))


def test_matrix_constraints_exact():
    L = tp.tensor([[1., 0.], [0.5, 2.]])
    U = L.mT
    assert bool(C.lower_triangular.check(L)) and not bool(C.lower_triangular.check(U))
    assert bool(C.lower_cholesky.check(L)) and not bool(C.lower_cholesky.check(-L))
    corr = tp.tensor([[1., 0.], [0.6, 0.8]])
    assert bool(C.corr_cholesky.check(corr)) and not bool(C.corr_cholesky.check(L))
    S = L @ L.mT
    assert bool(C.symmetric.check(S)) and not bool(C.symmetric.check(L))
    assert bool(C.positive_definite.check(S)) and not bool(C.positive_definite.check(-S))
    psd = tp.tensor([[1., 1.], [1., 1.]])
    assert bool(C.positive_semidefinite.check(psd)) and not bool(C.positive_definite.check(psd))
    assert _b(C.square.check(tp.zeros(3, 2, 2))) == [True] * 3
    assert _b(C.square.check(tp.zeros(3, 2, 3))) == [False] * 3


def test_cat_stack_and_attributes():
    x = tp.tensor([[1., -1., 2.], [-1., 1., 2.]])
    c = C.cat([C.real, C.positive], dim=1, lengths=[1, 2])
    assert _b(c.check(x)) == [[True, False, True], [True, True, True]]
    s = C.stack([C.positive, C.real, C.positive], dim=1)
    assert _b(s.check(x)) == [[True, True, True], [False, True, True]]
    assert C.boolean.is_discrete and not C.real.is_discrete and C.simplex.event_dim == 1
    assert C.cat([C.real, C.boolean]).is_discrete


def test_dependent_and_reprs():
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(tp.tensor(1.))
    with pytest.raises(NotImplementedError):
        C.dependent.event_dim
    assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1

    class D:
        @C.dependent_property(is_discrete=False, event_dim=0)
        def support(self):
            return C.greater_than(2.)
    assert C.is_dependent(D.support) and D.support.event_dim == 0
    assert repr(D().support) == "GreaterThan(lower_bound=2.0)"
    assert repr(C.interval(0, 1)) == "Interval(lower_bound=0, upper_bound=1)"
    assert repr(C.independent(C.real, 1)) == "IndependentConstraint(Real(), 1)"
    assert repr(C.dependent) == "Dependent()"
    assert repr(C.MixtureSameFamilyConstraint(C.real)) == "MixtureSameFamilyConstraint(Real())"
    assert set(C.__all__) >= {"real", "positive", "simplex", "cat", "stack", "lower_cholesky"}


def test_mixture_constraint_shape():
    c = C.MixtureSameFamilyConstraint(C.positive)
    out = c.check(tp.tensor([[1., -1.], [2., 3.]]))
    assert _b(out) == [[True, False], [True, True]]
