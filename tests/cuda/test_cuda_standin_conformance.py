"""The whole conformance suite on the CUDA backend's code running over the NumPy-based CuPy stand-in
(device type "fakecuda"). This validates the backend's logic (kernels.py, conv.py, norm.py, the xp
lowerings of fused.py, the counter-based RNG) against the suite's float64 references; it says nothing
about CuPy or a GPU: the same suite runs on the real backend with `tensorplug backends check cuda`
(bench/gpu_check.sh, test_cuda_gpu.py)."""
import pytest
from _standin import make_standin

import fake_cupy
from tensorplug.testing.conformance import pytest_tests

fake_cupy.reset(devices=2)
test_standin_conformance = pytest_tests(make_standin())


@pytest.fixture(autouse=True)
def _fresh_standin(standin_state):
    """Every check starts with the stand-in's default state (2 devices, device 0 current)."""
    yield
