"""The command line through typer's CliRunner: `backends list` (with a broken plugin), `backends show`,
`backends check` (success, a planted wrong kernel, expected failures, unknown names), `info`."""
import json
import subprocess
import sys

import numpy as np
from typer.testing import CliRunner

from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.cli.app import app
from tensorplug.dispatch import hookimpl, registry

runner = CliRunner()


def invoke(*args):
    """Run the app with a console wide enough that no table cell wraps (test_output.py checks 80)."""
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def register(backend, plugin_name=None):
    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(backend)
    registry.register_plugin(Plugin(), name=plugin_name or f"cli-test-{backend.name}")
    return backend


def register_comm():
    """A communication backend registered at run time (independent of the built-in mpi one)."""
    from tensorplug.dispatch import CommunicationBackend

    class FakeComm(CommunicationBackend):
        name = "fakecomm"
        version = "0.1"

        def all_reduce(self, array, op="sum"):
            return array
    return register(FakeComm())


class WrongMul(NumpyBackend):
    """mul is off by one for int32 (a planted bug the suite must find)."""
    name = "wrongmul"
    priority = -10
    version = "0.0.1"

    def native_kernels(self):
        k = dict(NumpyBackend.native_kernels(self))
        mul = k["mul"]

        def bad(x, y, out=None):
            r = mul(x, y, out=out)
            return r + 1 if r.dtype == np.int32 else r
        k["mul"] = bad
        return k


# -- list ------------------------------------------------------------------------------------------
def test_list_shows_a_broken_plugin_with_its_error():
    """A plugin that fails to import at discovery is listed with its error; the rest still works."""
    def loader():
        raise ImportError("brokenplug needs libfoo.so")
    registry._load("brokenplug", "brokenplug 1.0", loader)      # the entry-point discovery path
    r = invoke("backends", "list")
    assert r.exit_code == 0, r.output
    assert "broken plugin 'brokenplug' (brokenplug 1.0): ImportError: brokenplug needs libfoo.so" in r.output
    assert any(line.split()[:2] == ["numpy", "compute"] for line in r.output.splitlines())
    data = json.loads(invoke("backends", "list", "--json").output)
    (err,) = [p for p in data["plugin_errors"] if p["plugin"] == "brokenplug"]
    assert err["origin"] == "brokenplug 1.0" and err["error"].startswith("ImportError: brokenplug needs libfoo.so")
    info = json.loads(invoke("info", "--json").output)
    assert any(p["plugin"] == "brokenplug" and "libfoo" in p["error"] for p in info["plugins"])


def test_list_shows_a_runtime_backend():
    register(WrongMul())
    r = invoke("backends", "list")
    assert r.exit_code == 0
    row = next(line for line in r.output.splitlines() if line.startswith("wrongmul"))
    assert "runtime" in row and "0.0.1" in row and row.rstrip().endswith("no")


# -- show ------------------------------------------------------------------------------------------
def test_show_numpy_kernel_table():
    """show lists every SPI kernel with kind and status; NumPy implements all of them natively."""
    from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED
    r = invoke("backends", "show", "numpy")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("numpy: compute backend, device cpu")
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines if ln.split() and ln.split()[0] in {*REQUIRED, *OPTIONAL}}
    assert rows["add"] == ["required", "native"] and rows["softmax"] == ["optional", "native"]
    assert set(rows) == {*REQUIRED, *OPTIONAL}
    assert f"{len(REQUIRED) + len(OPTIONAL)} kernels: {len(REQUIRED) + len(OPTIONAL)} native, 0 decomposed" in r.output


def test_show_marks_decomposed_and_missing_kernels(backend_class):
    """A backend without softmax shows it decomposed; one without a required kernel shows it missing
    (and exits 1)."""
    register(backend_class("nosoftmax", drop=("softmax",))())
    data = json.loads(invoke("backends", "show", "nosoftmax", "--json").output)
    status = {k["kernel"]: k["status"] for k in data["kernels"]}
    assert status["softmax"] == "decomposed" and status["exp"] == "native"
    assert data["counts"]["decomposed"] == 1 and data["origin"] == "runtime"
    register(backend_class("nowhere", drop=("where",))())
    r = invoke("backends", "show", "nowhere")
    assert r.exit_code == 1
    assert any(ln.split() == ["where", "required", "missing"] for ln in r.output.splitlines())


def test_show_required_only_backend(backend_class):
    """A backend of the 40 required primitives alone: those native, every other kernel (the 42 that
    API version 1 required among them) decomposed, none missing, exit 0."""
    from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED, REQUIRED_V1
    register(backend_class("reqonly", drop=tuple(OPTIONAL))())
    r = invoke("backends", "show", "reqonly")
    assert r.exit_code == 0, r.output
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.output.splitlines() if ln.split()
            and ln.split()[0] in {*REQUIRED, *OPTIONAL}}
    assert rows["add"] == ["required", "native"] and rows["sub"] == ["optional", "decomposed"]
    assert {n for n, v in rows.items() if v[1] == "native"} == set(REQUIRED)
    assert all(rows[n] == ["optional", "decomposed"] for n in REQUIRED_V1 if n not in REQUIRED)
    total = len(REQUIRED) + len(OPTIONAL)
    assert f"{total} kernels: {len(REQUIRED)} native, {len(OPTIONAL)} decomposed" in r.output
    data = json.loads(invoke("backends", "show", "reqonly", "--json").output)
    assert data["tensorplug_api_version"] == 2 and data["counts"] == {
        "native": len(REQUIRED), "decomposed": len(OPTIONAL), "missing": 0}


def test_show_communication_backend():
    """show of a communication backend lists which collectives it provides."""
    register_comm()
    r = invoke("backends", "show", "fakecomm")
    assert r.exit_code == 0 and "communication backend" in r.output
    lines = [ln.split() for ln in r.output.splitlines()]
    assert ["all_reduce", "provided"] in lines and ["barrier", "missing"] in lines


def test_unknown_names_exit_2_with_the_known_ones():
    for cmd in (("backends", "show", "nosuch"), ("backends", "check", "nosuch")):
        r = invoke(*cmd)
        assert r.exit_code == 2
        assert "unknown backend 'nosuch'; registered backends:" in r.output and "numpy" in r.output


# -- check -----------------------------------------------------------------------------------------
def test_check_success_writes_a_json_report(tmp_path):
    """A selection that passes: exit 0, a summary table per family, a JSON report."""
    report = tmp_path / "report.json"
    r = invoke("backends", "check", "numpy", "-k", "pointwise.add.", "-k", "*.where.*", "--json", report)
    assert r.exit_code == 0, r.output
    assert "Checking backend 'numpy'" in r.output
    assert any(ln.split()[:1] == ["pointwise"] for ln in r.output.splitlines())
    assert "TOTAL" in r.output and "numpy: all" in r.output
    data = json.loads(report.read_text())
    assert data["ok"] is True and data["backend"]["name"] == "numpy"
    ids = {c["id"] for c in data["checks"]}
    assert "pointwise.add.forward[int8]" in ids and "pointwise.where.forward[bool]" in ids


def test_check_failure_names_the_op_and_dtype():
    """A planted wrong kernel: exit 1, and the failure names the check (op and dtype) and the sample."""
    register(WrongMul())
    r = invoke("backends", "check", "wrongmul", "-k", "pointwise.mul")
    assert r.exit_code == 1, r.output
    assert "FAILED pointwise.mul.forward[int32]: mul[int32]: sample 0" in r.output
    assert "pointwise.mul.forward[float32]" not in r.output.replace("FAILED pointwise.mul.forward[int32]", "")
    assert "wrongmul: 2 checks failed" in r.output


def test_check_xfail_file_turns_failures_into_expected(tmp_path):
    register(WrongMul())
    xf = tmp_path / "xfail.txt"
    xf.write_text("pointwise.mul.*[int32]  planted bug\n")
    r = invoke("backends", "check", "wrongmul", "-k", "pointwise.mul", "--xfail-file", xf)
    assert r.exit_code == 0, r.output
    assert "(2 expected failures)" in r.output


def test_check_list_and_bad_selection():
    r = invoke("backends", "check", "numpy", "-k", "device.", "--list")
    assert r.exit_code == 0 and r.output.split() == ["device.creation", "device.transfer", "device.results_stay",
                                                      "device.generator", "device.training_step"]
    r = invoke("backends", "check", "numpy", "-k", "no-such-check")
    assert r.exit_code == 2 and "no check id matches" in r.output


def test_check_refuses_communication_and_unavailable_backends(backend_class):
    register_comm()
    r = invoke("backends", "check", "fakecomm")
    assert r.exit_code == 2 and "communication backend" in r.output
    register(backend_class("offline", available=(False, "the device is unplugged"))())
    r = invoke("backends", "check", "offline")
    assert r.exit_code == 3 and "not available here: the device is unplugged" in r.output


def test_check_verbose_lists_every_check():
    r = invoke("backends", "check", "numpy", "-k", "spi.", "-v")
    assert r.exit_code == 0 and "PASSED   spi.attributes" in r.output and "PASSED   spi.required" in r.output


# -- info ------------------------------------------------------------------------------------------
def test_info_reports_versions_devices_and_setting_sources(monkeypatch, tmp_path):
    """info: versions, devices with their selected backend, and each setting with its source."""
    cfg = tmp_path / "config.toml"
    cfg.write_text('[backends]\ncpu = "numpy"\n')
    monkeypatch.setenv("TENSORPLUG_CONFIG", str(cfg))
    monkeypatch.setenv("TENSORPLUG_STRICT_PLUGINS", "0")
    registry.reset_selection()
    r = invoke("info")
    assert r.exit_code == 0, r.output
    assert any(ln.split()[:5] == ["tensorplug", "0.1.0", "(backend", "SPI", "version"] for ln in r.output.splitlines())
    assert "numpy" in r.output and "pluggy" in r.output
    lines = r.output.splitlines()
    assert any(ln.split()[:3] == ["cpu", "numpy", "numpy"] for ln in lines)
    assert any(ln.startswith("config file") and str(cfg) in ln and "environment TENSORPLUG_CONFIG" in ln
               for ln in lines)
    assert any(ln.startswith("backend for cpu") and f"config file {cfg}" in ln for ln in lines)
    data = json.loads(invoke("info", "--json").output)
    assert data["versions"]["tensorplug"] == "0.1.0"
    assert {"setting": "backend for cpu", "value": "numpy", "source": f"config file {cfg}"} in data["settings"]
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy")
    data = json.loads(invoke("info", "--json").output)
    assert {"setting": "backend for cpu", "value": "numpy", "source": "environment TENSORPLUG_BACKEND_CPU"} \
        in data["settings"]
    cpu = next(d for d in data["devices"] if d["device"] == "cpu")
    assert cpu["selected"] == "numpy" and cpu["count"] == 1


def test_info_with_a_bad_configuration_still_runs(monkeypatch):
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "nonesuch")
    registry.reset_selection()
    r = invoke("info")
    assert r.exit_code == 0
    assert "asks for backend 'nonesuch'" in r.output


def test_python_dash_m_check():
    """`python -m tensorplug backends check numpy -k ...` as a user runs it (exit code and output);
    piped, it prints no progress line."""
    p = subprocess.run([sys.executable, "-m", "tensorplug", "backends", "check", "numpy", "-k", "linalg.inv"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "linalg" in p.stdout and "all 5 checks conform" in p.stdout
    assert "conformance" not in p.stderr and "━" not in p.stderr, p.stderr
