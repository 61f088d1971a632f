"""Fixtures of the CUDA backend tests.

Most tests here run the real CudaBackend class over `fake_cupy`, a NumPy-based CuPy stand-in (see its
docstring): they check the backend's logic and the frontend's device plumbing on the CPU, and prove
nothing about CuPy or a GPU. The tests that need a GPU are in test_cuda_gpu.py and skip with the
reason when no usable CUDA backend is present.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fake_cupy  # noqa: E402
from _standin import make_standin, register  # noqa: E402


@pytest.fixture
def standin_state():
    """The stand-in's global state (devices, current device, counters), fresh for the test."""
    fake_cupy.reset(devices=2)
    yield fake_cupy.state()
    fake_cupy.reset(devices=2)


@pytest.fixture
def fakecuda(standin_state):
    """The CUDA backend over the stand-in, serving the device type "fakecuda" with 2 devices."""
    return register(make_standin())


@pytest.fixture
def cuda_standin(standin_state):
    """The CUDA backend over the stand-in registered for the device type "cuda" itself (priority over
    the built-in one, which is unavailable without a GPU), so tensorplug.cuda and x.cuda() can be
    tested."""
    return register(make_standin("cuda_standin", "cuda", priority=100))
