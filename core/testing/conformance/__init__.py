"""The conformance suite every tensorplug backend must pass.

Three ways to run it:

    tensorplug backends check NAME [-k PATTERN] [--json FILE] [--xfail-file FILE]
    pytest --pyargs tensorplug.testing.conformance --backend NAME
    # from a backend package's own tests:
    from tensorplug.testing.conformance import pytest_tests
    test_my_backend = pytest_tests("mybackend")

or from Python: `report = tensorplug.testing.conformance.run("numpy")`; `report.ok`,
`report.format_summary()`, `report.write_json(path)`.

What is checked (see runner.py for the check ids): every kernel of the op database (opdb/) against a
float64 NumPy reference on generated inputs (broadcasting, 0-d, empty, non-contiguous layouts, edge
values, every dtype the backend declares), result dtypes and shapes, aliasing of view kernels, random
kernels statistically, optional kernels natively and through their decomposition, frontend error
inputs on the backend's device, gradients and second gradients of frontend ops against finite
differences in float64, device placement, transfers, generators and a small training step.
"""
from __future__ import annotations

from .runner import Check, Report, Result, build_checks, collect_xfails, read_xfail_file, run, select

__all__ = ["run", "Report", "Result", "Check", "build_checks", "select", "collect_xfails", "read_xfail_file",
           "pytest_tests", "assert_conforms"]


def assert_conforms(backend, pattern=None, xfails=None, xfail_files=()) -> Report:
    """Run the suite and raise AssertionError listing the failures (returns the report otherwise)."""
    report = run(backend, pattern=pattern, xfails=xfails, xfail_files=xfail_files)
    if not report.ok:
        raise AssertionError(f"backend {report.backend['name']!r} fails {len(report.failures())} conformance "
                             f"checks:\n{report.format_failures()}")
    return report


def pytest_tests(backend, pattern=None, xfails=None, xfail_files=()):
    """A pytest test function parametrized with one test per conformance check of `backend` (a
    registered backend's name, or a Backend object). Assign it in a test module:

        test_conformance = pytest_tests("mybackend")

    Expected failures (the plugin hook, `xfails`, `xfail_files`) become xfail marks."""
    from .pytest_plugin import make_test
    return make_test(backend, pattern=pattern, xfails=xfails, xfail_files=xfail_files)
