"""`tensorplug backends check --timeout S`: a hanging kernel is a failed check naming the kernel, and
the run ends within the timeout plus start-up, whether the kernel sleeps or holds the GIL forever."""
import os
import subprocess
import sys
import time

from typer.testing import CliRunner

from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.cli.app import app
from tensorplug.dispatch import hookimpl, registry
from tensorplug.testing.conformance import runner as conformance

HANGPLUG = '''
import itertools
import time

from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.dispatch import hookimpl


def mul_sleeps_forever(x, y, out=None):
    while True:
        time.sleep(3600)


def neg_holds_the_gil(x, out=None):
    return sum(itertools.repeat(0))     # a C loop that never checks signals nor releases the GIL


class Hang(NumpyBackend):
    name = device_type = "hang"
    version = "0.1"

    def native_kernels(self):
        k = dict(NumpyBackend.native_kernels(self))
        k["mul"], k["neg"] = mul_sleeps_forever, neg_holds_the_gil
        return k


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(Hang())
'''

CHECKS = ["pointwise.neg.forward[float32]", "pointwise.add.forward[float32]", "pointwise.mul.forward[float32]"]


def _site(tmp_path):
    info = tmp_path / "hangplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hangplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tensorplug]\nhang = hangplug\n")
    (tmp_path / "hangplug.py").write_text(HANGPLUG)
    return tmp_path


def test_hanging_kernels_of_an_installed_plugin(tmp_path):
    """A sleeping mul and a GIL-holding neg each fail after the timeout, by name; add still passes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORPLUG_")}
    env["PYTHONPATH"] = os.pathsep.join([str(_site(tmp_path)), env.get("PYTHONPATH", "")])
    env["COLUMNS"] = "300"
    args = ["backends", "check", "hang", "--timeout", "2", "--no-progress", "-v"]
    for c in CHECKS:
        args += ["-k", c]
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", "from tensorplug.cli import main; main()", *args],
                       capture_output=True, text=True, timeout=240, env=env)
    elapsed = time.monotonic() - t0
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "FAILED pointwise.mul.forward[float32]: pointwise.mul.forward[float32]: timed out after 2 s: " \
           "kernel 'mul' did not return; it was in mul_sleeps_forever (" in out, out
    assert "FAILED pointwise.neg.forward[float32]: pointwise.neg.forward[float32]: timed out after 2 s: " \
           "kernel 'neg' did not return; it was in neg_holds_the_gil (" in out, out
    assert "PASSED   pointwise.add.forward[float32]" in out
    assert "hang: 2 checks failed" in out
    # two timeouts of 2 s, and three interpreters starting (each ~1-3 s here, more on a loaded machine)
    assert elapsed < 2 * 2 + 60, elapsed


class SleepyMul(NumpyBackend):
    name = device_type = "sleepymul"
    version = "0.1"

    def native_kernels(self):
        k = dict(NumpyBackend.native_kernels(self))

        def mul(x, y, out=None):
            time.sleep(3600)
        k["mul"] = mul
        return k


def _registered(backend):
    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(backend)
    registry.register_plugin(Plugin(), name=f"timeout-test-{backend.name}")
    return backend


def test_runtime_backend_times_out_in_process():
    """A backend registered at run time is checked in this process: SIGALRM ends the sleeping kernel."""
    b = _registered(SleepyMul())
    try:
        assert not conformance.discoverable(b)
        t0 = time.monotonic()
        res = CliRunner().invoke(app, ["backends", "check", "sleepymul", "--timeout", "0.5", "--no-progress",
                                       "-k", "pointwise.mul.forward[float32]", "-k", "pointwise.add.forward[float32]"],
                                 env={"COLUMNS": "300"})
        assert time.monotonic() - t0 < 20
        assert res.exit_code == 1, res.output
        assert "timed out after 0.5 s: kernel 'mul' did not return; it was in mul (" in res.output
        assert "sleepymul: 1 check failed" in res.output
        report = conformance.run(b, ["pointwise.mul.forward[float32]"], xfails={"pointwise.mul.*": "known hang"},
                                 timeout=0.3)
        assert [r.status for r in report.results] == ["xfailed"]
        assert "timed out after 0.3 s" in report.results[0].message
    finally:
        registry.unregister_plugin("timeout-test-sleepymul")


def test_default_timeout_and_builtin_in_a_worker():
    """--timeout defaults to 60 s; a built-in backend runs its checks in a worker process and passes."""
    from tensorplug.cli import commands
    import inspect
    assert inspect.signature(commands.check).parameters["timeout"].default.default == 60.0
    b = registry.compute["numpy"]
    assert conformance.discoverable(b)
    checks = conformance.select(conformance.build_checks(b), ["pointwise.sub.forward[float32]", "linalg.matmul.forward[float64]"])
    seen = []
    results = conformance.run_checks(b, checks, {}, 30, on_start=lambda c: seen.append(c.id))
    assert [r.status for r in results] == ["passed", "passed"] and seen == [c.id for c in checks]
