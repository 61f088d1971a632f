"""Packaging: the wheel built from the source tree ships every package folder under its `tensorplug.*`
name, declares the backend entry points and the console script, and imports from the wheel alone."""
import configparser
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"core": "tensorplug", "backends": "tensorplug.backends", "cli": "tensorplug.cli"}
PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md")
PACKAGE_DATA = (".md", ".json", ".npz", ".txt")


def _can_build_offline():
    if importlib.util.find_spec("setuptools") is None:
        return "setuptools is not installed (pip install -e '.[test]')"
    import setuptools
    if int(setuptools.__version__.split(".")[0]) < 77:
        return f"setuptools {setuptools.__version__} is older than the 77 pyproject.toml asks for " \
               "(pip install -e '.[test]')"
    return None


def _expected_packages(root=ROOT):
    """{package name: folder} for every folder with an __init__.py under core/, backends/, cli/."""
    found = {}
    for folder, name in SOURCES.items():
        for dirpath, dirnames, filenames in os.walk(root / folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            if "__init__.py" in filenames:
                rel = Path(dirpath).relative_to(root / folder)
                found[".".join([name, *rel.parts])] = Path(dirpath)
    return found


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A copy of the project's files: the build leaves the work tree untouched, and the checks
    compare the wheel with exactly what it was built from."""
    src = tmp_path_factory.mktemp("src")
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, src / name)
    for folder in SOURCES:
        shutil.copytree(ROOT / folder, src / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    return src


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory):
    """The wheel built by pip (no build isolation: offline, with this environment's setuptools)."""
    reason = _can_build_offline()
    if reason:
        pytest.skip(f"cannot build a wheel offline: {reason}")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--no-index", "-q", "-w", str(out), str(source)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"wheel build failed:\n{r.stdout}\n{r.stderr}"
    wheels = list(out.glob("tensorplug-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def names(wheel):
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def _dist_info_file(names, wheel, filename):
    (path,) = [n for n in names if n.endswith(".dist-info/" + filename)]
    with zipfile.ZipFile(wheel) as z:
        return z.read(path).decode()


def test_every_package_folder_is_shipped(names, source):
    """Each folder with an __init__.py under core/, backends/, cli/ is a package in the wheel."""
    expected = _expected_packages(source)
    assert {"tensorplug", "tensorplug.backends", "tensorplug.cli", "tensorplug.dispatch",
            "tensorplug.backends.numpy_backend"} <= set(expected)
    missing = [pkg for pkg in expected if pkg.replace(".", "/") + "/__init__.py" not in names]
    assert missing == []


def test_every_module_and_data_file_is_shipped(names, source):
    """Every .py module and package-data file of those packages is in the wheel, at its mapped path."""
    missing = []
    for pkg, folder in _expected_packages(source).items():
        for f in folder.iterdir():
            if f.is_file() and (f.suffix == ".py" or f.suffix in PACKAGE_DATA):
                target = pkg.replace(".", "/") + "/" + f.name
                if target not in names:
                    missing.append(target)
    assert missing == []
    assert not [n for n in names if n.startswith(("core/", "backends/", "cli/", "tests/"))]


def test_entry_points(names, wheel):
    """The `tensorplug` entry-point group lists numpy, cuda and mpi; the console script is declared."""
    parser = configparser.ConfigParser()
    parser.read_string(_dist_info_file(names, wheel, "entry_points.txt"))
    group = dict(parser["tensorplug"])
    assert group == {"numpy": "tensorplug.backends.numpy_backend",
                     "cuda": "tensorplug.backends.cuda_backend",
                     "mpi": "tensorplug.backends.mpi_dist"}
    for module in group.values():
        assert module.replace(".", "/") + "/__init__.py" in names
    assert dict(parser["console_scripts"]) == {"tensorplug": "tensorplug.cli:main"}


def test_metadata(names, wheel):
    """Name, Python requirement, runtime dependencies and extras are declared."""
    meta = _dist_info_file(names, wheel, "METADATA")
    assert "Name: tensorplug" in meta and "Requires-Python: >=3.11" in meta
    for dep in ("numpy", "pluggy", "typer"):
        assert f"Requires-Dist: {dep}" in meta
    for extra in ("cuda", "mpi", "test"):
        assert f"Provides-Extra: {extra}" in meta


def test_wheel_imports_on_its_own(wheel, source, tmp_path):
    """Unpacked on sys.path (no source tree), the wheel imports every package, finds its built-in
    plugins through its own entry points and computes."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    packages = sorted(_expected_packages(source))
    code = (
        "import importlib, json, sys\n"
        "import tensorplug as torch\n"
        f"mods = [importlib.import_module(p) for p in {packages!r}]\n"
        "from tensorplug.dispatch import registry\n"
        "registry.ensure_loaded()\n"
        "print(json.dumps({'file': torch.__file__, 'sum': (torch.ones(3) * 2).sum().item(),\n"
        "                  'plugins': {p.name: [p.origin, p.error] for p in registry.plugins}}))\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout)
    assert Path(out["file"]).is_relative_to(site)
    assert out["sum"] == 6.0
    for name in ("numpy", "cuda", "mpi"):
        origin, error = out["plugins"][name]
        assert origin == "tensorplug 0.1.0" and error is None


def test_readme_tour_runs_as_printed():
    """The README's first Python example runs and prints what its comments say."""
    import contextlib
    import io
    import re
    text = (ROOT / "README.md").read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    printed = out.getvalue()
    shown = re.findall(r"#\s*(?:broadcasting: |\.\.\. )?(tensor[^\n]*|tensorplug\.Size[^\n]*|cpu <[^\n]*)", code)
    assert len(shown) == 4
    for expected in shown:
        assert expected.strip() in printed, (expected, printed)
    assert 'python3 -m venv .venv && .venv/bin/pip install -e ".[tensorboard]" && .venv/bin/tensorplug demo' in text
    assert 'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -q' in text
