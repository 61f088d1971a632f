"""Fixtures of the mixed-precision tests: a clean per-thread autocast state for every test, and the
CUDA backend over the NumPy-based CuPy stand-in for the "cuda" op lists (see tests/cuda/_standin.py;
it checks autocast's policy on the device type, and proves nothing about a GPU)."""
from __future__ import annotations

import os
import sys

import pytest

from tensorplug.amp.state import state

_CUDA_TESTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "cuda")


@pytest.fixture(autouse=True)
def _clean_autocast_state():
    yield
    leaked = dict(state.enabled), state.nesting
    state.enabled.clear()
    state.dtypes.clear()
    state.cache.clear()
    state.cache_enabled = True
    state.nesting = 0
    state.on = False
    assert not any(leaked[0].values()) and leaked[1] == 0, f"autocast state leaked out of the test: {leaked}"


@pytest.fixture
def cuda_standin():
    """The CUDA backend over the CuPy stand-in, registered for "cuda" (removed after the test)."""
    if _CUDA_TESTS not in sys.path:
        sys.path.insert(0, _CUDA_TESTS)
    import fake_cupy
    from _standin import make_standin, register
    fake_cupy.reset(devices=1)
    yield register(make_standin("cuda_standin", "cuda", priority=100))
    fake_cupy.reset(devices=2)
