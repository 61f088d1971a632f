"""set_num_threads / get_num_threads really set the CPU backend's thread pools (NumPy's BLAS and
OpenMP, as threadpoolctl reports them); set_num_interop_threads can be set once, as in PyTorch."""
import os

import pytest
from threadpoolctl import threadpool_info

import tensorplug as torch
from tensorplug import threads


def blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture(autouse=True)
def _restore():
    before = torch.get_num_threads()
    interop = threads._interop[0]
    yield
    torch.set_num_threads(before)
    threads._interop[0] = interop


def test_set_num_threads_limits_blas():
    if not blas_threads():
        pytest.skip("NumPy uses no BLAS library that threadpoolctl finds here")
    torch.set_num_threads(1)
    assert blas_threads() == [1] * len(blas_threads()) and torch.get_num_threads() == 1
    torch.set_num_threads(2)
    assert set(blas_threads()) == {2} and torch.get_num_threads() == 2
    a = torch.randn(64, 64, dtype=torch.float64)
    torch.set_num_threads(1)
    assert torch.allclose(a @ a, torch.tensor(a.numpy() @ a.numpy()))


@pytest.mark.parametrize("bad, message", [(0, "expects a positive integer"), (-1, "expects a positive integer"),
                                          (1.5, "expects an int, but got float"), ("2", "expects an int, but got str"),
                                          (True, "expects an int, but got bool")])
def test_thread_count_errors(bad, message):
    for fn in ("set_num_threads", "set_num_interop_threads"):
        with pytest.raises(RuntimeError, match=f"^{fn} {message}$"):
            getattr(torch, fn)(bad)
    assert threads._interop[0] is None or threads._interop[0] > 0


def test_backend_without_a_thread_method(backend_class):
    """A CPU backend without set_num_threads keeps its threading; the count is recorded and read back,
    and NumPy's pools are untouched."""
    from tensorplug.dispatch import hookimpl, registry
    cls = backend_class("plain_cpu", "cpu", priority=50)
    cls.set_num_threads = cls.get_num_threads = None
    backend = cls()

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(backend)
    registry.register_plugin(Plugin(), name="test-plugin-plain-cpu")
    before = blas_threads()
    torch.set_num_threads(3)
    assert registry.backend_for("cpu") is backend and torch.get_num_threads() == 3 and blas_threads() == before


def test_interop_threads_once():
    threads._interop[0] = None
    assert torch.get_num_interop_threads() == (os.cpu_count() or 1)
    torch.set_num_interop_threads(3)
    assert torch.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="^Error: cannot set number of interop threads after parallel work "
                                           "has started or set_num_interop_threads called$"):
        torch.set_num_interop_threads(2)
    assert torch.get_num_interop_threads() == 3
