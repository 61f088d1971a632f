"""What the NumPy backend's modules of numba-compiled loops (gelu_loops, select_loops) share: numba is
optional (the `fast` extra) and imported on first use, and TENSORPLUG_NUMBA=0 turns the loops off."""
from __future__ import annotations

import os


def cached(state, build):
    """state["k"], set on the first call to build(numba): the module's kernels, or None when numba is
    not installed or TENSORPLUG_NUMBA=0 (the callers then run their NumPy formulas)."""
    if "k" not in state:
        kernels = None
        if os.environ.get("TENSORPLUG_NUMBA", "1") != "0":
            try:
                import numba
            except ImportError:
                numba = None
            if numba is not None:
                kernels = build(numba)
        state["k"] = kernels
    return state["k"]
