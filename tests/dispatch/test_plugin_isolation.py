"""A plugin can never break tensorplug: whatever a real entry-point plugin raises (any exception,
SystemExit, another BaseException) while importing, registering, answering is_available(), building
its kernel table, choosing a backend, or when its name / priority / dtypes are read, marks that plugin
broken with the reason, and the built-in CPU backend keeps working. Each case runs in a fresh
interpreter with the plugin's dist-info on its path."""
import pytest
from _plugin_dists import add_dist, backend_source, report, run

OK = 16.0          # (arange(4) * 2 + 1) @ ones(4), computed by REPORT


def _broken(out, dist):
    """The error recorded for distribution `dist` (its origin is "`dist` 1.0")."""
    errors = [err for key, (err, _) in out["plugins"].items() if key.endswith(f"@{dist} 1.0")]
    assert len(errors) == 1, out["plugins"]
    return errors[0]


CASES = {
    # dist: (module source, what the recorded error must contain)
    "availplug": (backend_source("avail_b", '''
        def is_available(self):
            raise RuntimeError("the probe crashed")
        '''), "is_available() of backend 'avail_b' raised RuntimeError: the probe crashed"),
    "availexitplug": (backend_source("availexit_b", '''
        def is_available(self):
            raise SystemExit(4)
        '''), "is_available() of backend 'availexit_b' raised SystemExit: 4"),
    "availshapeplug": (backend_source("availshape_b", '''
        def is_available(self):
            return "yes"
        '''), "is_available() of backend 'availshape_b' raised ValueError"),
    "prioplug": (backend_source("prio_b", 'priority = "high"'),
                 "TypeError: backend 'prio_b': priority must be a number, got 'high'"),
    "nanprioplug": (backend_source("nanprio_b", 'priority = float("nan")'),
                    "priority must be a number, got nan"),
    "nameplug": (backend_source("ignored", '''
        @property
        def name(self):
            raise LookupError("no name today")
        '''), "LookupError: no name today"),
    "dtypesplug": (backend_source("dtypes_b", "dtypes = frozenset((1, 2))"),
                   "TypeError: backend 'dtypes_b': dtypes must be a set of dtype names"),
    "exitplug": ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    "baseplug": ("class Boom(BaseException):\n    pass\n\n\nraise Boom('no GPU here')\n", "Boom: no GPU here"),
    "hookexitplug": ('''
        import sys
        from tensorplug.dispatch import hookimpl


        @hookimpl
        def tensorplug_register_backends(registry):
            sys.exit("hook gives up")
        ''', "SystemExit: hook gives up"),
    "tableplug": (backend_source("table_b", '''
        def native_kernels(self):
            raise OSError("libkernels.so: cannot open shared object file")
        '''), "building the kernel table of backend 'table_b' raised OSError: libkernels.so"),
    "selectplug": (backend_source("select_b", "", '''

        @hookimpl
        def tensorplug_select_backend(device_type, candidates):
            raise ZeroDivisionError("chooser bug")
        '''), "its tensorplug_select_backend hook raised ZeroDivisionError: chooser bug"),
}


@pytest.mark.parametrize("dist", sorted(CASES))
def test_broken_plugin_is_recorded_and_cpu_keeps_working(tmp_path, dist):
    """The op runs on the built-in numpy backend; the plugin is recorded broken with its reason and
    none of its backends stays registered."""
    source, expected = CASES[dist]
    out = report(add_dist(tmp_path, dist, source))
    assert out["value"] == OK and out["backend"] == "numpy"
    assert expected in _broken(out, dist)
    assert out["compute"] == ["cuda", "numpy"]
    numpy_rec = [v for k, v in out["plugins"].items() if k.startswith("numpy@")]
    assert numpy_rec == [[None, ["numpy"]]]


def test_a_plugin_device_whose_probe_raises_is_a_clear_error(tmp_path):
    """The device type a broken plugin alone served has no backend: a RuntimeError with the reason."""
    site = add_dist(tmp_path, "npuplug", backend_source("npu_b", '''
        device_type = "npu"

        def is_available(self):
            raise RuntimeError("driver exploded")
        '''))
    r = run(site, ["-c", "import tensorplug as t; print(t.ones(2).sum().item()); t.ones(1, device='npu')"])
    assert r.stdout.splitlines()[0] == "2.0"
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: no available backend for device type 'npu' (npu_b: is_available() of "
                           "backend 'npu_b' raised RuntimeError: driver exploded")


def test_third_party_backend_may_not_take_a_builtin_name(tmp_path):
    """A backend named `numpy` from another distribution is rejected naming that plugin; the built-in
    numpy backend serves the cpu and its own record stays clean."""
    out = report(add_dist(tmp_path, "evilplug", backend_source("numpy")))
    assert out["value"] == OK and out["backend"] == "numpy"
    assert "ValueError: the backend name 'numpy' belongs to tensorplug's built-in backend; plugin 'evilplug' " \
           "(evilplug 1.0) may not register a backend of that name" in _broken(out, "evilplug")
    assert [v for k, v in out["plugins"].items() if k.startswith("numpy@")] == [[None, ["numpy"]]]


def test_third_party_entry_point_may_not_take_a_builtin_plugin_name(tmp_path):
    """An entry point called `numpy` in another distribution is not even imported."""
    site = add_dist(tmp_path, "shadowplug", 'raise AssertionError("must not be imported")\n', entry_name="numpy")
    out = report(site)
    assert out["value"] == OK and out["backend"] == "numpy"
    error = _broken(out, "shadowplug")
    assert error.startswith("ValueError: the plugin name 'numpy' is taken by tensorplug")
    assert [v for k, v in out["plugins"].items() if k == "numpy@shadowplug 1.0"] == [[error, []]]


def test_backend_lacking_required_kernels_is_unavailable_and_skipped(tmp_path):
    """A higher-priority backend without `add` and `matmul` is listed unavailable with the missing
    names; selection moves to numpy, and asking for it by name says what it lacks."""
    site = add_dist(tmp_path, "partplug", backend_source("part_b", '''
        def native_kernels(self):
            table = dict(NumpyBackend.native_kernels(self))
            del table["matmul"], table["add"]
            return table
        '''))
    out = report(site)
    assert out["value"] == OK and out["backend"] == "numpy"
    assert "part_b" in out["compute"] and _broken(out, "partplug") is None
    r = run(site, ["-c", "import tensorplug as t; from tensorplug.dispatch import registry; "
                         "print(registry.available(registry.get('part_b')))"])
    assert r.stdout.strip() == "(False, 'lacks required kernels: add, matmul')", r.stderr
    r = run(site, ["-c", "import tensorplug as t; t.ones(1)"], {"TENSORPLUG_BACKEND_CPU": "part_b"})
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "RuntimeError: environment TENSORPLUG_BACKEND_CPU asks for backend 'part_b', which is not available: "
        "lacks required kernels: add, matmul")


def test_keyboard_interrupt_still_interrupts(tmp_path):
    """Ctrl-C during plugin discovery is the user's: it is not swallowed as a plugin failure."""
    site = add_dist(tmp_path, "ctrlcplug", "raise KeyboardInterrupt\n")
    r = run(site, ["-c", "import tensorplug as t; t.ones(1); print('ran on')"])
    assert r.returncode != 0 and "ran on" not in r.stdout
    assert r.stderr.strip().splitlines()[-1] == "KeyboardInterrupt"


@pytest.mark.parametrize("value", ["1", "TRUE", "Yes", "on"])
def test_strict_mode_reraises_what_the_plugin_raised(tmp_path, value):
    """TENSORPLUG_STRICT_PLUGINS (any spelling of true) surfaces the plugin's own exception."""
    site = add_dist(tmp_path, "availplug", CASES["availplug"][0])
    r = run(site, ["-c", "import tensorplug as t; t.ones(1)"], {"TENSORPLUG_STRICT_PLUGINS": value})
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == "RuntimeError: the probe crashed"


@pytest.mark.parametrize("value", ["0", "false", "NO", "Off", ""])
def test_strict_mode_off_spellings(tmp_path, value):
    """Every spelling of false (and empty) leaves strict mode off: the broken plugin is skipped."""
    site = add_dist(tmp_path, "exitplug", CASES["exitplug"][0])
    out = report(site, {"TENSORPLUG_STRICT_PLUGINS": value})
    assert out["value"] == OK and "SystemExit: 3" in _broken(out, "exitplug")
