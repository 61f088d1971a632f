"""The conformance suite as pytest tests: `pytest --pyargs tensorplug.testing.conformance --backend NAME`
(default: the backend serving cpu). `-k` selects checks by id, `--xfail-file FILE` lists expected
failures."""
from __future__ import annotations


def pytest_generate_tests(metafunc):
    if "conformance_check" not in metafunc.fixturenames:
        return
    from tensorplug.dispatch import registry

    from .pytest_plugin import check_params
    from .runner import resolve
    name = metafunc.config.getoption("tensorplug_backend", None) or registry.backend_for("cpu").name
    files = [f for f in [metafunc.config.getoption("tensorplug_xfail_file", None)] if f]
    backend = resolve(name)
    metafunc.config._tensorplug_conformance_backend = backend
    metafunc.parametrize("conformance_check", check_params(backend, xfail_files=files))


def test_conformance(conformance_check, request):
    import pytest

    from .checks import Skip
    from .runner import selected
    with selected(request.config._tensorplug_conformance_backend):
        try:
            conformance_check.fn()
        except Skip as e:
            pytest.skip(str(e))
