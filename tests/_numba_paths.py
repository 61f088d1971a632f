"""A fixture that runs a test through both paths of a NumPy-backend module of numba loops
(backends/numpy_backend/numba_loops.py): its NumPy formula (the loops switched off) and its loops."""
import pytest


def loops_fixture(module, numpy_path):
    """A fixture parametrized over [numpy_path, "numba loops"]; the loops' case is skipped, with the
    reason, where numba is not installed or TENSORPLUG_NUMBA=0."""
    @pytest.fixture(params=[numpy_path, "numba loops"])
    def path(request, monkeypatch):
        if request.param == numpy_path:
            monkeypatch.setitem(module._state, "k", None)
        elif module.kernels() is None:
            pytest.skip("numba is not installed (the fast extra) or TENSORPLUG_NUMBA=0: the loops are not used")
        return request.param
    return path
