"""pytest integration (registered as the `pytest11` entry point `tensorplug`).

- `--backend NAME` (alias `--tensorplug-backend`) and `--xfail-file FILE` (alias
  `--tensorplug-xfail-file`) choose what `pytest --pyargs tensorplug.testing.conformance` checks;
- the NumPy backend's RuntimeWarning filter holds inside tests too (pytest resets filters per test);
- modules inside the installed tensorplug package are imported under their real names (an editable
  install maps `tensorplug` onto the `core/` folder, which pytest would otherwise import as `core`);
- `make_test(backend)` builds the parametrized test behind `conformance.pytest_tests`.

Importing this module is cheap: it does not load any backend.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

_PKG_ROOT = Path(__file__).resolve().parent.parent.parent       # the folder of package `tensorplug`


def pytest_addoption(parser):
    group = parser.getgroup("tensorplug", "tensorplug conformance suite")
    for names, dest, help_ in (
            (("--backend", "--tensorplug-backend"), "tensorplug_backend",
             "backend checked by tensorplug.testing.conformance (default: the one serving cpu)"),
            (("--xfail-file", "--tensorplug-xfail-file"), "tensorplug_xfail_file",
             "file of expected conformance failures: lines 'CHECK-ID-OR-GLOB reason', or a JSON object")):
        try:
            group.addoption(*names, dest=dest, default=None, help=help_)
        except ValueError:               # another plugin owns the short spelling
            group.addoption(names[1], dest=dest, default=None, help=help_)


def pytest_configure(config):
    # pytest resets warning filters around every test, which drops the NumPy backend's own filter
    # (IEEE results without RuntimeWarnings, as PyTorch); the same filter, as pytest configuration
    config.addinivalue_line("filterwarnings", r"ignore::RuntimeWarning:tensorplug\.backends\.numpy_backend")


def _in_package(path) -> bool:
    try:
        Path(path).resolve().relative_to(_PKG_ROOT)
        return True
    except ValueError:
        return False


def _module_name(path) -> str:
    rel = Path(path).resolve().relative_to(_PKG_ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["tensorplug", *parts])


class _PackageModule(pytest.Module):
    """A test module of the tensorplug package, imported by its dotted name."""

    def _getobj(self):
        return importlib.import_module(_module_name(self.path))


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path, parent):
    # folders of the package are plain directories for pytest: no `core.__init__` imports
    if _in_package(path) and Path(path).resolve() != _PKG_ROOT.parent:
        return pytest.Dir.from_parent(parent, path=path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    if _in_package(module_path):
        return _PackageModule.from_parent(parent, path=module_path)
    return None


def pytest_report_header(config):
    name = config.getoption("tensorplug_backend", None)
    if name:
        return f"tensorplug conformance backend: {name}"
    return None


# -- the parametrized test ---------------------------------------------------------------------------
def check_params(b, pattern=None, xfails=None, xfail_files=()):
    """One pytest param per conformance check of backend `b` (expected failures marked xfail); a
    backend unavailable here (no GPU, a missing library) gives one skipped param with the reason."""
    from .runner import build_checks, collect_xfails, select, xfail_reason
    ok, why = b.is_available()
    if not ok:
        return [pytest.param(None, id=f"{b.name}-unavailable",
                             marks=pytest.mark.skip(reason=f"backend {b.name!r} is not available here: {why}"))]
    expected = collect_xfails(b, xfails, xfail_files)
    params = []
    for c in select(build_checks(b), pattern):
        reason = xfail_reason(c.id, expected)
        marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
        params.append(pytest.param(c, id=c.id, marks=marks))
    return params


def make_test(backend, pattern=None, xfails=None, xfail_files=()):
    from .runner import resolve
    b = resolve(backend)
    params = check_params(b, pattern, xfails, xfail_files)

    @pytest.mark.parametrize("conformance_check", params)
    def test_conformance(conformance_check):
        from .checks import Skip
        from .runner import selected
        with selected(b):
            try:
                conformance_check.fn()
            except Skip as e:
                pytest.skip(str(e))
    test_conformance.backend = b
    return test_conformance
