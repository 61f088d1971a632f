"""Constraints: regions of value space a parameter or sample lives in (torch.distributions.constraints).

A constraint's `check(value)` returns a bool tensor of shape `value.shape[:value.dim() - event_dim]`
(one answer per event); `is_discrete` and `event_dim` say what kind of space it is. Objects are
singletons where PyTorch's are (`real`, `positive`, ...), classes where they take arguments
(`interval(lo, hi)`, `independent(c, n)`, ...).

    >>> import tensorplug
    >>> interval(0., 1.).check(tensorplug.tensor([0.5, 2.0]))
    tensor([ True, False])
"""
from __future__ import annotations

import tensorplug as _tp

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval",
           "is_dependent", "less_than", "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint",
           "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_semidefinite",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "square", "stack",
           "symmetric", "unit_interval"]


class Constraint:
    """Abstract base: a region over which a variable is valid. Subclasses set `is_discrete` and
    `event_dim` (the number of rightmost dims that together make one event) and define `check`."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A bool tensor saying, per event, whether `value` satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """Placeholder for a support that depends on other variables (it cannot be checked)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A dependent constraint with some static attributes filled in."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether `constraint` is a `dependent` placeholder (its support varies with other variables)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint: a Distribution's `support` computed from its
    parameters on instances, and a `dependent` placeholder when looked up on the class."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        """Use as a decorator with arguments: @dependent_property(is_discrete=..., event_dim=...)."""
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """Reinterprets the `reinterpreted_batch_ndims` rightmost batch dims of a constraint as event dims."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"independent: base_constraint must be a Constraint, got {type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("independent: reinterpreted_batch_ndims must be a non-negative int, got "
                             f"{reinterpreted_batch_ndims!r}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.dim() < n:
            raise ValueError(f"Expected value.dim() >= {self.base_constraint.event_dim + n} but got {value.dim()}")
        if n == 0:
            return result
        return result.reshape(tuple(result.shape[:result.dim() - n]) + (-1,)).all(-1)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: the component distributions' support, checked for every
    component (the mixture dim sits just left of the event dims)."""

    def __init__(self, base_constraint):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("MixtureSameFamilyConstraint: base_constraint must be a Constraint, got "
                            f"{type(base_constraint).__name__}")
        self.base_constraint = base_constraint
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim

    def check(self, value):
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    """Values in {0, 1}."""
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors: 0/1 entries summing to 1 along the last dim."""
    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & value.sum(-1).eq(1)


class _IntegerInterval(Constraint):
    """Integers in [lower_bound, upper_bound]."""
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _IntegerLessThan(Constraint):
    """Integers <= upper_bound."""
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value <= self.upper_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    """Integers >= lower_bound."""
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    """The extended real line (-inf, inf); only NaN fails."""

    def check(self, value):
        return value == value


class _GreaterThan(Constraint):
    """Reals strictly greater than lower_bound."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    """Reals >= lower_bound."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    """Reals strictly less than upper_bound."""

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """Reals in the closed interval [lower_bound, upper_bound]."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _HalfOpenInterval(Constraint):
    """Reals in [lower_bound, upper_bound)."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _Simplex(Constraint):
    """Nonnegative vectors summing to 1 (to 1e-6) along the last dim."""
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Nonnegative integer count vectors whose sum is at most upper_bound (PyTorch checks `<=`, so
    the same constraint also covers partially observed counts)."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


def _flat_all(ok, batch_shape):
    return ok.reshape(tuple(batch_shape) + (-1,)).all(-1)


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""
    event_dim = 2

    def check(self, value):
        return _flat_all(value.tril() == value, value.shape[:-2])


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""
    event_dim = 2

    def check(self, value):
        lower = _flat_all(value.tril() == value, value.shape[:-2])
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower_cholesky with unit-norm rows."""
    event_dim = 2

    def check(self, value):
        tol = _tp.finfo(value.dtype).eps * value.size(-1) * 10
        row_norm = _tp.linalg.vector_norm(value.detach(), dim=-1)
        unit_rows = (row_norm - 1.0).abs().le(tol).all(-1)
        return _LowerCholesky().check(value) & unit_rows


class _Square(Constraint):
    """Square matrices."""
    event_dim = 2

    def check(self, value):
        return _tp.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=_tp.bool,
                        device=value.device)


class _Symmetric(_Square):
    """Symmetric matrices (to atol 1e-6)."""

    def check(self, value):
        square = super().check(value)
        if not square.all():
            return square
        return _tp.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


def _host_matrix_check(value, fn):
    # a bool answer per matrix computed on the host: checks are Python-level decisions, not graph ops
    import numpy as np
    a = np.asarray(value.detach()._host(), dtype=np.float64)
    out = np.array([fn(m) for m in a.reshape((-1,) + a.shape[-2:])], dtype=bool).reshape(a.shape[:-2])
    return _tp.tensor(out, dtype=_tp.bool, device=value.device)


def _is_pd(m):
    import numpy as np
    try:
        np.linalg.cholesky(m)
        return True
    except np.linalg.LinAlgError:
        return False


class _PositiveSemidefinite(_Symmetric):
    """Symmetric matrices with nonnegative eigenvalues."""

    def check(self, value):
        sym = super().check(value)
        if not sym.all():
            return sym
        import numpy as np
        return _host_matrix_check(value, lambda m: bool((np.linalg.eigvalsh(m) >= 0).all()))


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with a Cholesky factorisation (positive eigenvalues)."""

    def check(self, value):
        sym = super().check(value)
        if not sym.all():
            return sym
        return _host_matrix_check(value, _is_pd)


class _Cat(Constraint):
    """Applies each constraint of `cseq` to its slice (of size `lengths[i]`, default 1) along `dim`."""

    def __init__(self, cseq, dim=0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("cat: every element of cseq must be a Constraint")
        self.cseq = list(cseq)
        if lengths is None:
            lengths = [1] * len(self.cseq)
        self.lengths = list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat: got {len(self.cseq)} constraints but {len(self.lengths)} lengths")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"cat: dim {self.dim} out of range for a {value.dim()}-D value")
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return _tp.cat(checks, self.dim)


class _Stack(Constraint):
    """Applies the i-th constraint of `cseq` to `value.select(dim, i)`."""

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("stack: every element of cseq must be a Constraint")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"stack: dim {self.dim} out of range for a {value.dim()}-D value")
        parts = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return _tp.stack([c.check(v) for v, c in zip(parts, self.cseq)], self.dim)


# Public interface: singletons for the fixed regions, classes for the parameterised ones.
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
