"""Distribution: the base class of every family (torch.distributions.distribution).

Shapes follow PyTorch: a sample has shape sample_shape + batch_shape + event_shape; log_prob reduces
the event dimensions. With validation on (the default under `python` without -O), parameters are
checked against `arg_constraints` at construction and values against `support` in log_prob/cdf/...
"""
from __future__ import annotations

import warnings

import tensorplug as tp
from tensorplug.tensor import Size, Tensor

from .utils import _lazy_property_and_property

__all__ = ["Distribution"]


def _constraints():
    from . import constraints  # loads on first validation: most scripts never validate twice
    return constraints


class Distribution:
    """Abstract base class for probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution made after this call."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. "
                              "Please set `arg_constraints = {}` or initialize the distribution "
                              "with `validate_args=False` to turn off validation.")
            constraints = _constraints()
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # checked by whoever computes the parameter it depends on
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                             _lazy_property_and_property):
                    continue  # the lazily derived twin (probs of logits, ...) is valid by construction
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                        f"{constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution of the same family with its batch dimensions expanded to
        `batch_shape` (parameters are expanded views, no copy)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self):
        """Parameter name -> constraint each must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint of the values a sample takes."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()) -> Tensor:
        """A sample of shape sample_shape + batch_shape + event_shape, without gradient."""
        with tp.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        """A reparameterised sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """All values of a discrete support along a new leading dimension (expanded over the batch
        unless expand=False)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return tp.exp(self.entropy())

    def _extended_shape(self, sample_shape=Size()) -> Size:
        """sample_shape + batch_shape + event_shape."""
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """Check a value's type, shape (against batch and event shape) and support; raises ValueError."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape = value.shape
        n_event = len(self._event_shape)
        if Size(tuple(shape)[len(shape) - n_event:]) != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{shape} vs {self._event_shape}.")
        expected = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{shape} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. "
                          "Please initialize the distribution with `validate_args=False` to turn off "
                          "validation.")
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        """The object `expand` fills in: a bare instance of the caller's class."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_params(self, cls, batch_shape, _instance, names, param_tail=None):
        """expand() for a family whose parameters all have shape batch_shape + param_tail (the
        event shape unless given): a new instance holding expanded views of those of `names` that
        this one has set."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        tail = self._event_shape if param_tail is None else param_tail
        shape = tuple(batch_shape) + tuple(tail)
        for name in names:
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p].item() if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return f"{self.__class__.__name__}({args})"
