"""The whole conformance suite on the NumPy backend, one pytest test per check, through the helper a
third-party backend's test suite uses (`conformance.pytest_tests`)."""
from pathlib import Path

from tensorplug.testing.conformance import pytest_tests

KNOWN_FAILURES = Path(__file__).with_name("known_failures.txt")

test_numpy_conformance = pytest_tests("numpy", xfail_files=[KNOWN_FAILURES])
