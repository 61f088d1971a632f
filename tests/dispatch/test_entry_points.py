"""Discovery through real entry points (group `tensorplug`) of installed distributions: a working
third-party plugin, one that fails to import and one whose hook raises, in a fresh interpreter."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

GOOD = '''
from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.dispatch import hookimpl


class ThirdParty(NumpyBackend):
    name = "numpy_ep"
    priority = -1
    version = "2.0"


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(ThirdParty())
'''

BROKEN = 'raise ImportError("brokenplug needs libfoo.so")\n'

BADHOOK = '''
from tensorplug.dispatch import hookimpl


@hookimpl
def tensorplug_register_backends(registry):
    raise RuntimeError("badhook cannot find its device")
'''


def _dist(site, name, version, module_source):
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[tensorplug]\n{name.removesuffix('plug')} = {name}\n")
    (site / f"{name}.py").write_text(module_source)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A folder with three installed distributions carrying `tensorplug` entry points."""
    site = tmp_path_factory.mktemp("site")
    _dist(site, "goodplug", "2.0", GOOD)
    _dist(site, "brokenplug", "1.0", BROKEN)
    _dist(site, "badhookplug", "0.3", BADHOOK)
    return site


def _run(site, args, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORPLUG_BACKEND_")}
    full_env["PYTHONPATH"] = os.pathsep.join([str(site), full_env.get("PYTHONPATH", "")])
    full_env.update(env)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, env=full_env)


REPORT = textwrap.dedent('''
    import json
    import tensorplug as torch
    x = torch.ones(2) * 3
    from tensorplug.dispatch import registry
    print(json.dumps({"x": x.tolist(), "backend": x.backend.name,
                      "plugins": {p.name: [p.origin, p.error, p.backends] for p in registry.plugins}}))
''')


def test_broken_plugins_are_recorded_and_skipped(site):
    """import tensorplug works; the broken plugins are recorded with their errors; the good one loads."""
    r = _run(site, ["-c", REPORT])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["x"] == [3.0, 3.0] and out["backend"] == "numpy"
    plugins = out["plugins"]
    origin, error, backends = plugins["broken"]
    assert origin == "brokenplug 1.0"
    assert error.startswith("ImportError: brokenplug needs libfoo.so")
    assert backends == []
    origin, error, backends = plugins["badhook"]
    assert origin == "badhookplug 0.3" and "RuntimeError: badhook cannot find its device" in error
    assert plugins["good"] == ["goodplug 2.0", None, ["numpy_ep"]]
    assert plugins["numpy"][1] is None


def test_third_party_backend_is_selected_by_environment(site):
    """A backend from an installed distribution is selectable with TENSORPLUG_BACKEND_CPU."""
    r = _run(site, ["-c", REPORT], TENSORPLUG_BACKEND_CPU="numpy_ep")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == "numpy_ep"


def test_cli_lists_broken_plugins(site):
    """`tensorplug backends list` shows the third-party backend and each broken plugin's error."""
    r = _run(site, ["-m", "tensorplug", "backends", "list"])
    assert r.returncode == 0, r.stderr
    assert "numpy_ep" in r.stdout and "goodplug 2.0" in r.stdout
    assert "broken plugin 'broken' (brokenplug 1.0): ImportError: brokenplug needs libfoo.so" in r.stdout
    assert "broken plugin 'badhook'" in r.stdout
    r = _run(site, ["-m", "tensorplug", "backends", "list", "--json"])
    errors = {e["plugin"]: e for e in json.loads(r.stdout)["plugin_errors"]}
    assert set(errors) == {"broken", "badhook"}


def test_strict_mode_reraises(site):
    """TENSORPLUG_STRICT_PLUGINS=1 turns a plugin's import error into an exception at discovery."""
    r = _run(site, ["-c", "import tensorplug; tensorplug.ones(1)"], TENSORPLUG_STRICT_PLUGINS="1")
    assert r.returncode != 0
    assert "brokenplug needs libfoo.so" in r.stderr
