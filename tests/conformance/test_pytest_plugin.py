"""`pytest --pyargs tensorplug.testing.conformance --backend NAME` in a fresh interpreter: the suite
shipped inside the package runs as pytest tests, `-k` selects, `--xfail-file` expects, and a planted
wrong kernel of an installed third-party backend makes pytest fail naming the op and dtype, and a
backend unavailable here is one visible skip with its reason."""
import os
import subprocess
import sys
import textwrap

PLUGIN = "tensorplug.testing.conformance.pytest_plugin"

BADPLUG = textwrap.dedent('''
    import numpy as np
    from tensorplug.backends.numpy_backend import NumpyBackend
    from tensorplug.dispatch import hookimpl


    class Bad(NumpyBackend):
        name = "badsub"
        priority = -1

        def native_kernels(self):
            k = dict(NumpyBackend.native_kernels(self))
            sub = k["sub"]
            k["sub"] = lambda x, y, out=None: sub(y, x, out=out) if np.result_type(x, y) == np.int16 \\
                else sub(x, y, out=out)
            return k


    @hookimpl
    def tensorplug_register_backends(registry):
        registry.add(Bad())
''')


def _plugin_args():
    """Load the plugin by module name whether or not the installed metadata has its pytest11 entry
    point (named `tensorplug`, blocked here so that it cannot register twice)."""
    return ["-p", "no:tensorplug", "-p", PLUGIN]


def test_the_entry_point_is_declared():
    """pyproject.toml declares the pytest11 entry point that makes `--backend` known to pytest."""
    import tomllib
    from pathlib import Path
    data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["pytest11"] == {"tensorplug": PLUGIN}


def _pytest(cwd, *args, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORPLUG_BACKEND_")}
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *_plugin_args(), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd, env=full_env)


def _installed_plugin(tmp_path, dist, entry, source):
    """A one-module distribution `dist` whose tensorplug entry point `entry` is the module: the
    environment (PYTHONPATH) under which a fresh interpreter sees it installed."""
    site = tmp_path / "site"
    site.mkdir()
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[tensorplug]\n{entry} = {dist}\n")
    (site / f"{dist}.py").write_text(source)
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_pyargs_runs_the_shipped_suite(tmp_path):
    r = _pytest(tmp_path, "--pyargs", "tensorplug.testing.conformance", "--backend", "numpy", "-q",
                "-k", "pointwise.add. or device.")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert "passed" in summary and "failed" not in summary
    assert int(summary.split()[0]) >= 20


def test_pyargs_catches_a_planted_bug_and_honours_xfail_file(tmp_path):
    env = _installed_plugin(tmp_path, "badplug", "badsub", BADPLUG)
    r = _pytest(tmp_path, "--pyargs", "tensorplug.testing.conformance", "--backend", "badsub", "-q",
                "-k", "pointwise.sub.forward", env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "FAILED" in r.stdout and "pointwise.sub.forward[int16]" in r.stdout
    assert "sub[int16]: sample 0" in r.stdout
    xf = tmp_path / "xfail.txt"
    xf.write_text("pointwise.sub.forward[int16]  planted\n")
    r = _pytest(tmp_path, "--pyargs", "tensorplug.testing.conformance", "--backend", "badsub", "-q",
                "-k", "pointwise.sub.forward", "--xfail-file", str(xf), env=env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "1 xfailed" in r.stdout


OFFLINE = textwrap.dedent('''
    from tensorplug.backends.numpy_backend import NumpyBackend
    from tensorplug.dispatch import hookimpl


    class Offline(NumpyBackend):
        name = "offline"
        device_type = "offlinedev"

        def is_available(self):
            return False, "no frobnicator attached"

        def native_kernels(self):
            raise AssertionError("an unavailable backend must not be asked for kernels")


    @hookimpl
    def tensorplug_register_backends(registry):
        registry.add(Offline())
''')


def test_an_unavailable_backend_is_one_visible_skip(tmp_path):
    env = _installed_plugin(tmp_path, "offplug", "offline", OFFLINE)
    r = _pytest(tmp_path, "--pyargs", "tensorplug.testing.conformance", "--backend", "offline", "-q", "-rs",
                env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1].startswith("1 skipped")
    assert "backend 'offline' is not available here: no frobnicator attached" in r.stdout
    # the same through pytest_tests(), as a backend's own test suite uses it
    (tmp_path / "test_own.py").write_text("from tensorplug.testing.conformance import pytest_tests\n"
                                          "test_conformance = pytest_tests('offline')\n")
    r = _pytest(tmp_path, "-q", "-rs", "test_own.py", env=env)
    assert r.returncode == 0 and "1 skipped" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert "no frobnicator attached" in r.stdout


def test_numpy_backend_warnings_stay_silent_inside_tests(tmp_path):
    """pytest resets warning filters per test; the plugin keeps the backend's IEEE results silent there
    too, while NumPy's own warnings in the test still show."""
    (tmp_path / "test_ieee.py").write_text(textwrap.dedent('''
        import numpy as np
        import pytest
        import tensorplug as torch

        torch.ones(1)       # the backend loads (and sets its filter) at collection, before pytest resets filters

        def test_log_zero():
            assert torch.log(torch.zeros(1)).tolist() == [float("-inf")]
            x = torch.tensor([float("inf")])
            assert (x - x).isnan().all()

        def test_numpy_itself_still_warns():
            with pytest.warns(RuntimeWarning, match="divide by zero"):
                np.log(np.zeros(1))
    '''))
    r = _pytest(tmp_path, "-q", "test_ieee.py")
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert "RuntimeWarning" not in r.stdout and "warning" not in r.stdout.splitlines()[-1], r.stdout[-3000:]
