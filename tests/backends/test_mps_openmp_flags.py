"""tensorplug.backends.mps (answered by the registry) and .openmp (an OpenMP runtime in the process)."""
import sys

import pytest

import tensorplug as torch

mps, openmp = torch.backends.mps, torch.backends.openmp


def test_mps_without_and_with_a_plugin(add_backend):
    """No MPS backend ships: both False. A plugin for "mps" makes it built, and available when it is."""
    assert mps.is_built() is False and mps.is_available() is False
    add_backend("mps_off", device_type="mps", available=(False, "no Apple GPU"))
    assert mps.is_built() is True and mps.is_available() is False
    add_backend("mps_on", device_type="mps")
    assert mps.is_available() is True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_openmp_is_an_openmp_runtime_in_the_process():
    """True exactly when an OpenMP runtime (libgomp, libomp, libiomp) is mapped into this process."""
    import numpy  # noqa: F401  (its BLAS is what may pull one in)
    with open("/proc/self/maps") as f:
        names = {line.split()[-1].rsplit("/", 1)[-1] for line in f if "/" in line}
    loaded = any(n.startswith(("libgomp", "libomp", "libiomp")) for n in names)
    assert openmp.is_available() is loaded
