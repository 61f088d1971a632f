"""The command line: `tensorplug backends list [--json]`, `tensorplug demo`, `python -m tensorplug`."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import tensorplug.backends
from tensorplug.cli.app import app

runner = CliRunner()


def _invoke(*args):
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})     # wide: no cell wraps
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_list_table_shows_every_column(add_backend):
    """The table has name, kind, device, version, origin, availability and selection."""
    add_backend("numpy_alt", priority=-1)
    out = _invoke("backends", "list")
    header, *lines = out.splitlines()
    assert header.split() == ["NAME", "KIND", "DEVICE", "VERSION", "ORIGIN", "STATUS", "SELECTED"]
    rows = {line.split()[0]: line for line in lines}
    assert rows["numpy"].split()[:3] == ["numpy", "compute", "cpu"]
    assert "available" in rows["numpy"] and rows["numpy"].rstrip().endswith("yes (priority)")
    assert "runtime" in rows["numpy_alt"] and "9.9" in rows["numpy_alt"]
    assert rows["numpy_alt"].rstrip().endswith("no")
    assert rows["mpi"].split()[1] == "communication"
    if not tensorplug.backends.get("cuda").is_available()[0]:
        assert "unavailable" in rows["cuda"] and "cuda unavailable: " in out      # the reason below the table


def test_list_json(add_backend):
    """--json gives one object per backend (with the selection and its reason) and the plugin errors."""
    add_backend("numpy_alt", priority=5)
    data = json.loads(_invoke("backends", "list", "--json"))
    rows = {r["name"]: r for r in data["backends"]}
    assert rows["numpy_alt"]["selected"] is True and rows["numpy_alt"]["selected_by"] == "priority"
    assert rows["numpy"]["selected"] is False
    assert rows["numpy"]["available"] is True and rows["numpy"]["reason"] is None
    assert rows["mpi"]["kind"] == "communication" and rows["mpi"]["selected"] is None
    assert set(rows["numpy"]) >= {"name", "kind", "device", "version", "origin", "available", "reason",
                                  "selected", "selected_by"}
    cuda = rows["cuda"]
    assert cuda["available"] or cuda["reason"]
    assert data["plugin_errors"] == []


def test_list_reports_a_configuration_error(monkeypatch):
    """A bad backend name in the environment is shown, not a traceback."""
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "nonesuch")
    tensorplug.backends.reset()
    from tensorplug.dispatch import registry
    registry.reset_selection()
    out = _invoke("backends", "list")
    assert "selection error: environment TENSORPLUG_BACKEND_CPU asks for backend 'nonesuch'" in out


def test_python_dash_m_and_console_script():
    """`python -m tensorplug` and the installed `tensorplug` script both run the app."""
    r = subprocess.run([sys.executable, "-m", "tensorplug", "backends", "list"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "numpy" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tensorplug", "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "tensorplug" in r.stdout and "backends" in r.stdout
    script = shutil.which("tensorplug", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the tensorplug console script is not installed next to this interpreter")
    r = subprocess.run([script, "backends", "list", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "numpy" in {b["name"] for b in json.loads(r.stdout)["backends"]}
