"""`tensorplug backends list`, `backends show` and `info` with broken real entry-point plugins and with
bad configuration: each problem is one clear line naming the plugin, file or variable, the exit code
is as documented, and no traceback is ever printed."""
import json

import pytest
from _plugin_dists import add_dist, backend_source, run

PARTIAL = '''
def native_kernels(self):
    table = dict(NumpyBackend.native_kernels(self))
    del table["matmul"], table["add"]
    return table
'''

EXPECTED_BROKEN = {
    "availplug": "is_available() of backend 'avail_b' raised RuntimeError: the probe crashed",
    "prioplug": "TypeError: backend 'prio_b': priority must be a number, got 'high'",
    "exitplug": "SystemExit: 3",
    "evilplug": "ValueError: the backend name 'numpy' belongs to tensorplug's built-in backend; plugin 'evilplug' "
                "(evilplug 1.0) may not register a backend of that name",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Four broken plugins and one whose backend lacks two required kernels, installed together."""
    site = tmp_path_factory.mktemp("site")
    add_dist(site, "availplug", backend_source("avail_b", '''
        def is_available(self):
            raise RuntimeError("the probe crashed")
        '''))
    add_dist(site, "prioplug", backend_source("prio_b", 'priority = "high"'))
    add_dist(site, "exitplug", "import sys\nsys.exit(3)\n")
    add_dist(site, "evilplug", backend_source("numpy"))
    add_dist(site, "partplug", backend_source("part_b", PARTIAL))
    return site


def _tensorplug(site, *args, env=None):
    r = run(site, ["-m", "tensorplug", *args], env)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r


def test_list_shows_each_broken_plugin_and_the_cpu_selected(site):
    r = _tensorplug(site, "backends", "list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    numpy_row = [ln.split() for ln in lines if ln.startswith("numpy ")]
    assert numpy_row == [["numpy", "compute", "cpu", numpy_row[0][3], "tensorplug", numpy_row[0][5],
                          "available", "yes", "(priority)"]]
    part_row = [ln.split() for ln in lines if ln.startswith("part_b  ")]
    assert part_row == [["part_b", "compute", "cpu", "1.0", "partplug", "1.0", "unavailable", "no"]]
    assert "part_b unavailable: lacks required kernels: add, matmul" in lines
    for dist, error in EXPECTED_BROKEN.items():
        line = [ln for ln in lines if ln.startswith(f"broken plugin '{dist}' ({dist} 1.0): ")]
        assert len(line) == 1 and error in line[0], (dist, lines)
    assert not [ln for ln in lines if ln.startswith("broken plugin 'numpy'")]
    assert not [ln for ln in lines if ln.startswith(("avail_b", "prio_b"))]


def test_list_json_reports_the_same(site):
    r = _tensorplug(site, "backends", "list", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    errors = {e["plugin"]: e for e in data["plugin_errors"]}
    assert set(errors) == set(EXPECTED_BROKEN)
    for dist, error in EXPECTED_BROKEN.items():
        assert errors[dist]["origin"] == f"{dist} 1.0" and error in errors[dist]["error"]
    rows = {row["name"]: row for row in data["backends"]}
    assert rows["part_b"]["available"] is False
    assert rows["part_b"]["reason"] == "lacks required kernels: add, matmul"
    assert rows["numpy"]["selected"] is True and rows["numpy"]["origin"].startswith("tensorplug ")
    assert data["config_error"] is None


def test_show_reports_missing_required_kernels(site):
    r = _tensorplug(site, "backends", "show", "part_b", "--json")
    info = json.loads(r.stdout)
    assert info["available"] is False and info["reason"] == "lacks required kernels: add, matmul"
    status = {k["kernel"]: k["status"] for k in info["kernels"]}
    assert status["add"] == status["matmul"] == "missing"
    assert r.returncode == 1                    # missing kernels, as `show` documents


def test_info_lists_broken_plugins_and_only_working_backends(site):
    r = _tensorplug(site, "info", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    plugins = {p["plugin"]: p for p in data["plugins"]}
    for dist, error in EXPECTED_BROKEN.items():
        assert error in plugins[dist]["error"] and plugins[dist]["backends"] == []
    cpu = [d for d in data["devices"] if d["device"] == "cpu"][0]
    assert cpu["selected"] == "numpy" and cpu["backends"] == ["part_b", "numpy"]
    assert data["config_error"] is None


# -- configuration errors ---------------------------------------------------------------------------
def _bad_configs(tmp_path):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text('[backends\ncpu = "numpy"\n')
    bad_utf8 = tmp_path / "bad8.toml"
    bad_utf8.write_bytes(b'[backends]\ncpu = "n\xe9umpy"\n')
    return {
        "toml": (bad_toml, f"cannot read config file {bad_toml} (named by TENSORPLUG_CONFIG): invalid TOML: "
                           f"Expected ']' at the end of a table declaration (at line 1, column 10)"),
        "utf8": (bad_utf8, f"cannot read config file {bad_utf8} (named by TENSORPLUG_CONFIG): not valid UTF-8 "
                           f"(byte 0xe9 at line 2)"),
        "missing": (tmp_path / "absent.toml",
                    f"config file {tmp_path / 'absent.toml'} (named by TENSORPLUG_CONFIG) does not exist"),
        "directory": (tmp_path, f"config file {tmp_path} (named by TENSORPLUG_CONFIG) is a directory, "
                                f"not a TOML file"),
    }


@pytest.mark.parametrize("case", ["toml", "utf8", "missing", "directory"])
def test_config_errors_in_list_info_and_ops(tmp_path, case):
    """One line naming the file in `backends list` (which still lists the backends) and `info`; an op
    raises a ConfigError with the same words."""
    path, message = _bad_configs(tmp_path)[case]
    env = {"TENSORPLUG_CONFIG": str(path)}
    r = _tensorplug(None, "backends", "list", env=env)
    assert r.returncode == 0
    assert f"configuration error: tensorplug: {message}" in r.stdout.splitlines()
    assert any(ln.startswith("numpy ") for ln in r.stdout.splitlines())
    assert "selection error" not in r.stdout                 # the same problem, said once
    data = json.loads(_tensorplug(None, "backends", "list", "--json", env=env).stdout)
    assert data["config_error"] == f"tensorplug: {message}"
    r = _tensorplug(None, "info", env=env)
    assert r.returncode == 0
    assert f"configuration error: tensorplug: {message}" in r.stdout
    r = run(None, ["-c", "import tensorplug; tensorplug.ones(1)"], env)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == f"tensorplug.dispatch.config.ConfigError: tensorplug: {message}"


def test_invalid_boolean_variable_in_list_and_info():
    env = {"TENSORPLUG_STRICT_PLUGINS": "sometimes"}
    message = ("tensorplug: environment variable TENSORPLUG_STRICT_PLUGINS='sometimes' is not a boolean; "
               "use 1/0, true/false, yes/no or on/off")
    r = _tensorplug(None, "backends", "list", env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == f"Error: {message}"
    data = json.loads(_tensorplug(None, "info", "--json", env=env).stdout)
    assert data["config_error"] == message
    strict = [s for s in data["settings"] if s["setting"] == "strict plugins"]
    assert strict == [{"setting": "strict plugins", "value": "invalid: 'sometimes'",
                       "source": "environment TENSORPLUG_STRICT_PLUGINS"}]


@pytest.mark.parametrize("value,shown", [("yes", "on"), ("OFF", "off"), ("False", "off"), ("1", "on")])
def test_info_reads_strict_mode_with_the_common_parser(value, shown):
    data = json.loads(_tensorplug(None, "info", "--json", env={"TENSORPLUG_STRICT_PLUGINS": value}).stdout)
    strict = [s for s in data["settings"] if s["setting"] == "strict plugins"]
    assert strict[0]["value"] == shown
