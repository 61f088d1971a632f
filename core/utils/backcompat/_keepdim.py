"""keepdim_warning: PyTorch 0.2's warning for a reduction over a dim called without keepdim (whose default
changed from True to False). The reductions of ops.reduction call `warn_keepdim` when the switch is on."""
from __future__ import annotations

from ._warn import warn

KEEPDIM = ('backwards compatibility: call to "{}" uses default value for keepdim which has changed default '
           'to False.  Consider passing as kwarg.')


def warn_keepdim(name: str) -> None:
    warn(KEEPDIM.format(name))
