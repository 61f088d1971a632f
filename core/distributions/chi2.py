"""Chi-squared distribution with `df` degrees of freedom: Gamma(df / 2, 1 / 2)."""
from __future__ import annotations

from . import constraints
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi-squared distribution, a Gamma with concentration df / 2 and rate 1 / 2.

    >>> Chi2(tp.tensor([1.0])).sample()
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df_t,) = broadcast_all(df)
        super().__init__(0.5 * df_t if not isinstance(df, (int, float)) else 0.5 * df, 0.5,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2
