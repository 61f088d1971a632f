"""tensorplug.backends.cudnn and .mkldnn: PyTorch's defaults without those libraries, bool-checked
switches, free attributes, and flags() restoring the switches."""
import pytest

import tensorplug as torch

cudnn, mkldnn = torch.backends.cudnn, torch.backends.mkldnn


@pytest.fixture(autouse=True)
def _restore():
    saved = {m: {k: getattr(m, k) for k in ("enabled", "deterministic", "benchmark", "allow_tf32",
                                             "benchmark_limit") if hasattr(m, k)} for m in (cudnn, mkldnn)}
    yield
    for m, values in saved.items():
        m.__dict__.update(values)


def test_cudnn_defaults_without_cudnn():
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)
    assert cudnn.is_available() is False and cudnn.version() is None and cudnn.benchmark_limit is None
    assert cudnn.is_acceptable(torch.zeros(1)) is False


@pytest.mark.parametrize("name, setter", [("enabled", "set_enabled_cudnn"), ("benchmark", "set_benchmark_cudnn"),
                                          ("deterministic", "set_deterministic_cudnn"),
                                          ("allow_tf32", "set_allow_tf32_cudnn")])
def test_cudnn_switches_take_bools(name, setter):
    setattr(cudnn, name, not getattr(cudnn, name))
    value = getattr(cudnn, name)
    for bad, kind in ((1, "int"), ("x", "str")):
        with pytest.raises(RuntimeError, match=f"^{setter} expects a bool, but got {kind}$"):
            setattr(cudnn, name, bad)
    assert getattr(cudnn, name) is value


def test_cudnn_free_attributes_and_flags():
    """Other names are plain attributes (as in PyTorch); flags() sets its switches inside the block and
    restores them, also after an exception."""
    cudnn.benchmark_limit = 5
    cudnn.some_setting = 3
    assert cudnn.benchmark_limit == 5 and cudnn.some_setting == 3
    del cudnn.some_setting
    cudnn.benchmark = True
    with cudnn.flags(enabled=False, benchmark=False, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (False, False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, False)
    with pytest.raises(ValueError):
        with cudnn.flags(enabled=False):
            raise ValueError
    assert cudnn.enabled is True


def test_mkldnn():
    """NumPy uses no oneDNN: unavailable; `enabled` (default True) and `deterministic` are bool switches."""
    assert mkldnn.is_available() is False and mkldnn.enabled is True and mkldnn.deterministic is False
    mkldnn.enabled = False
    assert mkldnn.enabled is False
    with pytest.raises(RuntimeError, match="^set_enabled_mkldnn expects a bool, but got int$"):
        mkldnn.enabled = 1
    with mkldnn.flags(enabled=True, deterministic=True):
        assert mkldnn.enabled is True and mkldnn.deterministic is True
    assert mkldnn.enabled is False and mkldnn.deterministic is False
