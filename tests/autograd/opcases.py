"""The gradient-table case and its input makers, shared by test_op_gradients.py and the op families
whose cases live in files of their own (cases_*.py, appended to its CASES)."""
import numpy as np

import tensorplug as torch


def r(*shape, low=-1.0, high=1.0, seed=0):
    """A float64 leaf requiring grad with values in [low, high)."""
    rng = np.random.default_rng(seed + 17 * len(shape))
    return torch.tensor(rng.uniform(low, high, size=shape), dtype=torch.float64, requires_grad=True)


def pos(*shape, seed=0):
    return r(*shape, low=0.5, high=2.0, seed=seed)


def nc(*shape, seed=0, low=-1.0, high=1.0):
    """A non-contiguous (axes-reversed) float64 leaf of the given shape."""
    rng = np.random.default_rng(seed + 101)
    t = torch.tensor(rng.uniform(low, high, size=shape[::-1]), dtype=torch.float64)
    return t.permute(*reversed(range(len(shape)))).detach().requires_grad_()


class Case:
    def __init__(self, name, fn, make, second_order=True, **tolerances):
        self.name, self.fn, self.make, self.second_order = name, fn, make, second_order
        self.tol = tolerances

    def __repr__(self):
        return self.name
