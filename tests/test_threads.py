"""set_num_threads / get_num_threads really set the CPU backend's thread pools (NumPy's BLAS and
OpenMP, as threadpoolctl reports them); set_num_interop_threads can be set once, as in PyTorch; the
default (one BLAS thread unless the environment names a count) is applied by `import tensorplug`."""
import json
import os
import subprocess
import sys

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


# -- the default, in fresh interpreters ---------------------------------------------------------------------
REPORT = ("import json, os\n"
          "from threadpoolctl import threadpool_info\n"
          "print(json.dumps({'blas': [l['num_threads'] for l in threadpool_info() if l['user_api'] == 'blas'],\n"
          "                  'tp': t.get_num_threads() if t else None,\n"
          "                  'applied': t.threads.default_applied[0] if t else None,\n"
          "                  'env': {k: os.environ.get(k) for k in threads.THREAD_ENV}}))\n")


def fresh(code, **env_vars):
    env = {k: v for k, v in os.environ.items() if k not in threads.THREAD_ENV}
    env.update(env_vars)
    p = subprocess.run([sys.executable, "-c", code + "\n" + REPORT], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


needs_blas = pytest.mark.skipif(not blas_threads(), reason="NumPy uses no BLAS library that threadpoolctl finds here")
PLAIN_NUMPY = "import numpy; t = None; from tensorplug import threads"


@needs_blas
def test_default_is_one_blas_thread_and_leaves_the_environment_alone():
    r = fresh("import tensorplug as t; from tensorplug import threads")
    assert r["blas"] == [1] * len(r["blas"]) and r["tp"] == 1 and r["applied"] == "env"
    assert r["env"] == dict.fromkeys(threads.THREAD_ENV)          # set only while NumPy loaded its BLAS


@needs_blas
def test_default_after_numpy_was_imported_first():
    r = fresh("import numpy; import tensorplug as t; from tensorplug import threads")
    assert r["blas"] == [1] * len(r["blas"]) and r["tp"] == 1 and r["applied"] == "threadpoolctl"


@needs_blas
@pytest.mark.parametrize("var", ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"])
def test_a_count_in_the_environment_is_respected(var):
    """The user's variable wins: tensorplug's BLAS pool is what NumPy alone makes of it."""
    want = fresh(PLAIN_NUMPY, **{var: "2"})["blas"]
    r = fresh("import tensorplug as t; from tensorplug import threads", **{var: "2"})
    assert r["applied"] is None and r["blas"] == want and r["tp"] == max(want)


@needs_blas
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: OpenBLAS caps its pool at 1")
def test_set_num_threads_raises_the_default():
    r = fresh("import tensorplug as t; from tensorplug import threads; t.set_num_threads(2)")
    assert r["blas"] == [2] * len(r["blas"]) and r["tp"] == 2
