"""Whatever a user logs (tensorplug tensor, NumPy array, Python or NumPy number) as a NumPy array."""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor


def make_np(x) -> np.ndarray:
    """`x` as a NumPy array on the host; a number becomes a 1-element array (as in PyTorch)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        # force: a copy off any device, and no complaint about requires_grad (logging reads values only)
        a = np.asarray(x.numpy(force=True))
        if a.dtype.kind not in "biufc":          # extension dtypes (bfloat16, fp8) have no NumPy math
            a = a.astype(np.float32)
        return a
    raise NotImplementedError(f"Got {type(x)}, but numpy array or tensorplug tensor are expected.")
