"""The Recorders of tensorplug.fx (see core/fx/_dispatch.py) are in place only while these tests run:
importing fx installs them process-wide, which would change function identities (`torch.trapz is
torch.trapezoid`) for the rest of a pytest session."""
import pytest

import tensorplug.fx  # noqa: F401
from tensorplug.fx import _dispatch

_dispatch.uninstall()


@pytest.fixture(autouse=True, scope="module")
def _recorders():
    _dispatch.install()
    yield
    _dispatch.uninstall()
