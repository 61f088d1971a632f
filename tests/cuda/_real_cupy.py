"""The installed CuPy, for the checks that need real CuPy but no GPU (`pip install -e ".[cuda-check]"`).
Where it is missing they skip with the reason; with TENSORPLUG_REQUIRE_CUPY_CHECKS=1 (set by .ci/run,
which installs it) they fail instead, so a broken install cannot pass as a skip."""
from __future__ import annotations

import os

import pytest


def unavailable(reason):
    if os.environ.get("TENSORPLUG_REQUIRE_CUPY_CHECKS") == "1":
        pytest.fail(f"TENSORPLUG_REQUIRE_CUPY_CHECKS=1 but {reason}")
    pytest.skip(reason)


def real_cupy():
    """(cupy, cupyx), importing CuPy (which needs no GPU)."""
    try:
        import cupy
        import cupyx
    except Exception as e:      # noqa: BLE001 - ImportError, or a CuPy that fails to load its libraries
        unavailable(f"real CuPy is not installed here ({type(e).__name__}: {e})")
    return cupy, cupyx


def nvrtc(compile_sources):
    """Skip (or fail) unless `compile_sources([])` works: CuPy, NVRTC and the CUDA headers present."""
    real_cupy()
    try:
        compile_sources([])
    except Exception as e:      # noqa: BLE001 - any missing piece (NVRTC, CUDA headers)
        unavailable(f"compiling CUDA needs NVRTC and the CUDA headers (no GPU); not here: {type(e).__name__}: {e}")
