"""tensorplug.utils.collect_env (and `tensorplug info`): what a bug report needs, each field checked
against platform / NumPy / threadpoolctl / mpi4py's own answers; MPI never started here; the pip
command for an extra matches how tensorplug is installed."""
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import tensorplug
from tensorplug.cli.app import app
from tensorplug.utils import collect_env

ROOT = Path(__file__).resolve().parents[2]
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None


@pytest.fixture(scope="module")
def info():
    return collect_env.get_env_info()


def test_versions_python_and_os(info):
    v = info["versions"]
    assert v["tensorplug"] == tensorplug.__version__ and v["numpy"] == np.__version__
    assert v["python"] == platform.python_version() == info["python"]["version"]
    assert info["python"]["executable"] == sys.executable
    assert info["os"]["platform"] == platform.platform() and info["os"]["machine"] == platform.machine()
    if sys.platform.startswith("linux"):
        assert info["os"]["name"] == platform.freedesktop_os_release()["PRETTY_NAME"]
    for dist in ("pluggy", "typer", "rich"):
        assert v[dist] == importlib.metadata.version(dist)
    json.dumps(info)                                     # all of it serialisable


def test_cpu(info):
    cpu = info["cpu"]
    assert cpu["logical_cores"] == os.cpu_count()
    if hasattr(os, "sched_getaffinity"):
        assert cpu["usable_cores"] == len(os.sched_getaffinity(0))
    if sys.platform.startswith("linux"):
        text = Path("/proc/cpuinfo").read_text()
        if "model name" in text:
            assert cpu["model"] == text.split("model name", 1)[1].split(":", 1)[1].splitlines()[0].strip()
        assert 1 <= (cpu["physical_cores"] or 1) <= cpu["logical_cores"]


def test_blas_vendor_kernel_and_threads(info):
    blas = info["blas"]
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        assert blas["libraries"] == [] and "threadpoolctl" in blas["error"]
    else:
        expected = [lib for lib in threadpool_info() if lib["user_api"] in ("blas", "openmp")]
        assert [(b["internal_api"], b["version"], b["num_threads"], b.get("architecture")) for b in blas["libraries"]] \
            == [(b["internal_api"], b["version"], b["num_threads"], b.get("architecture")) for b in expected]
        for lib in blas["libraries"]:
            text = collect_env.describe_blas(lib)
            assert str(lib["version"]) in text and f"{lib['num_threads']} thread" in text
            if lib.get("architecture"):
                assert f"kernel {lib['architecture']}" in text
    built = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    assert blas["numpy_built_with"] == {"name": built["name"], "version": built["version"]}


@pytest.mark.skipif(not HAVE_MPI4PY, reason="mpi4py is not installed")
def test_mpi_library_without_starting_mpi(info):
    """The library version as `python -m mpi4py --mpi-lib-version` prints it; mpi4py.MPI is not
    imported (importing it would initialise MPI) in this process."""
    mpi = info["mpi"]
    assert mpi["error"] is None, mpi["error"]
    assert mpi["mpi4py"] == importlib.metadata.version("mpi4py")
    ref = subprocess.run([sys.executable, "-m", "mpi4py", "--mpi-lib-version"], capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert mpi["library_version"] == ref
    assert mpi["library"] and mpi["library"].split()[0] in ref.splitlines()[0]
    std = subprocess.run([sys.executable, "-m", "mpi4py", "--mpi-std-version"], capture_output=True, text=True,
                         timeout=60).stdout.strip()
    assert std.endswith(f"MPI {mpi['standard']})") or std == f"MPI {mpi['standard']}"      # "MPI 4.1 (runtime: MPI 5.0)"
    assert "mpi4py.MPI" not in sys.modules or sys.modules["mpi4py.MPI"].Is_initialized()


def test_mpi_absent(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mpi4py" else real(name, *a))
    assert collect_env._mpi_info() is None


def test_cuda_from_package_metadata(info):
    cuda = info["cuda"]
    for dist in ("cupy", "cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x"):
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            assert dist not in cuda["cupy"]
        else:
            assert cuda["cupy"][dist] == version
    if not cuda["cupy"]:
        assert cuda["runtime"] is None


def test_devices_settings_and_plugins(info):
    names = {p["plugin"]: p for p in info["plugins"]}
    assert names["numpy"]["origin"] == f"tensorplug {tensorplug.__version__}" and "numpy" in names["numpy"]["backends"]
    cpu = next(d for d in info["devices"] if d["device"] == "cpu")
    from tensorplug.dispatch import registry
    assert cpu["selected"] == registry.backend_for("cpu").name and cpu["count"] == 1
    assert {"config file", "strict plugins", "default dtype"} <= {s["setting"] for s in info["settings"]}


def test_text_report_and_module_entry_point(info):
    text = collect_env.get_pretty_env_info(info)
    fields = dict(line.split(": ", 1) for line in text.splitlines()[:9] if ": " in line)
    assert {"tensorplug", "Python", "OS", "CPU", "packages", "BLAS", "MPI", "CUDA"} <= set(fields)
    assert fields["Python"].startswith(platform.python_version())
    assert f"numpy {np.__version__}" in fields["packages"]
    assert f"{os.cpu_count()} logical cores" in fields["CPU"]
    p = subprocess.run([sys.executable, "-m", "tensorplug.utils.collect_env", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["versions"]["numpy"] == np.__version__ and data["cpu"]["logical_cores"] == os.cpu_count()
    p = subprocess.run([sys.executable, "-m", "tensorplug.utils.collect_env", "--bad"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and "usage" in p.stderr


def test_tensorplug_info_shows_the_same_fields():
    r = CliRunner().invoke(app, ["info"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    firsts = [ln.split()[0] for ln in r.output.splitlines() if ln.strip()]
    for field in ("tensorplug", "Python", "OS", "CPU", "packages", "BLAS", "MPI", "CUDA"):
        assert field in firsts
    assert f"numpy {np.__version__}" in r.output


# -- how tensorplug is installed, and the pip command of an extra ------------------------------------------
class _Dist:
    def __init__(self, direct_url):
        self.direct_url, self.version = direct_url, "0.1.0"

    def read_text(self, name):
        return self.direct_url if name == "direct_url.json" else None

    def locate_file(self, path):
        return Path("/site-packages")


@pytest.mark.parametrize("direct_url,kind,command", [
    ('{"url": "file:///src/tp%20clone", "dir_info": {"editable": true}}', "editable",
     '-m pip install -e "/src/tp clone[mpi]"'),
    ('{"url": "file:///src/tp", "dir_info": {}}', "directory", '-m pip install "/src/tp[mpi]"'),
    ('{"url": "https://example.org/tensorplug-0.1.0.whl", "archive_info": {}}', "index",
     '-m pip install "tensorplug[mpi]"'),
    (None, "index", '-m pip install "tensorplug[mpi]"'),
])
def test_pip_command_for_each_kind_of_installation(monkeypatch, direct_url, kind, command):
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(direct_url))
    assert collect_env.install_info()["kind"] == kind
    assert collect_env.pip_install_command("mpi").endswith(command)


def test_pip_command_without_an_installation(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    assert collect_env.install_info() == {"kind": "source", "location": str(ROOT), "version": None}
    assert collect_env.pip_install_command("cuda").endswith(f'-m pip install -e "{ROOT}[cuda]"')


def test_pip_command_here_names_this_python_and_a_real_extra(monkeypatch):
    """Run by this interpreter: `python` when that is it on PATH, else its full path; the extra
    exists in the clone's pyproject.toml."""
    cmd = collect_env.pip_install_command("mpi")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    if os.path.exists(os.path.join(os.path.dirname(sys.executable), "python")):
        assert collect_env.pip_install_command("mpi").startswith("python -m pip install ")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert collect_env.pip_install_command("mpi").startswith(f"{sys.executable} -m pip install ")
    info = collect_env.install_info()
    if info["kind"] in ("editable", "directory", "source"):
        assert f'"{info["location"]}[mpi]"' in cmd
        extras = tomllib.loads((Path(info["location"]) / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        assert "mpi" in extras and "cuda" in extras
