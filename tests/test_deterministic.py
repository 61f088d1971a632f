"""use_deterministic_algorithms and its queries, with PyTorch's argument checks and debug-mode API."""
import pytest

import tensorplug as torch
from tensorplug import deterministic


@pytest.fixture(autouse=True)
def _off():
    yield
    deterministic._mode[:] = [False, False]


def test_mode_round_trips():
    assert not torch.are_deterministic_algorithms_enabled()
    assert not torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    assert torch.are_deterministic_algorithms_enabled() and not torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.get_deterministic_debug_mode() == 2
    torch.use_deterministic_algorithms(True, warn_only=True)
    assert torch.is_deterministic_algorithms_warn_only_enabled() and torch.get_deterministic_debug_mode() == 1
    torch.use_deterministic_algorithms(mode=False)
    assert not torch.are_deterministic_algorithms_enabled() and torch.get_deterministic_debug_mode() == 0
    torch.use_deterministic_algorithms(False, warn_only=True)
    assert torch.is_deterministic_algorithms_warn_only_enabled() and torch.get_deterministic_debug_mode() == 0


def test_argument_checks():
    with pytest.raises(TypeError, match="argument 'mode' \\(position 1\\) must be bool, not int"):
        torch.use_deterministic_algorithms(1)
    with pytest.raises(TypeError, match="argument 'warn_only' must be bool, not int"):
        torch.use_deterministic_algorithms(True, warn_only=1)
    with pytest.raises(TypeError):
        torch.use_deterministic_algorithms(True, True)           # warn_only is keyword-only
    assert not torch.are_deterministic_algorithms_enabled()


@pytest.mark.parametrize("mode, on, warn", [("default", False, False), ("warn", True, True), ("error", True, False),
                                            (0, False, False), (1, True, True), (2, True, False)])
def test_debug_mode(mode, on, warn):
    torch.set_deterministic_debug_mode(mode)
    assert (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()) \
        == (on, warn)


def test_debug_mode_errors():
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`, but got x$"):
        torch.set_deterministic_debug_mode("x")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 5$"):
        torch.set_deterministic_debug_mode(5)
    with pytest.raises(TypeError, match="debug_mode must be str or int"):
        torch.set_deterministic_debug_mode(1.0)
