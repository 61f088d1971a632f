"""The built-in CUDA and NCCL backends: registered through the plugin hook, importing no CuPy, and
reporting why they are unavailable (CuPy missing, no driver, no device, no working kernel)."""
import os
import subprocess
import sys

import pytest
from _standin import make_standin

import fake_cupy
import tensorplug
import tensorplug.cuda
from tensorplug.backends.cuda_backend import CudaBackend
from tensorplug.backends.cuda_backend.nccl import NcclBackend
from tensorplug.dispatch import REQUIRED, registry


def test_cuda_and_nccl_are_registered_by_the_builtin_plugin():
    """The cuda compute backend (device "cuda", indexed) and the nccl communication backend come from
    the built-in plugin "cuda", which loaded without error."""
    registry.ensure_loaded()
    cuda = registry.compute["cuda"]
    assert isinstance(cuda, CudaBackend) and cuda.device_type == "cuda" and cuda.indexed
    assert isinstance(registry.communication["nccl"], NcclBackend)
    rec = [p for p in registry.plugins if p.name == "cuda"][0]
    assert rec.error is None and set(rec.backends) == {"cuda", "nccl"}


def test_import_tensorplug_imports_no_cupy():
    """`import tensorplug` (and loading every plugin) never imports CuPy."""
    code = ("import sys, tensorplug; from tensorplug.dispatch import registry; registry.ensure_loaded(); "
            "import tensorplug.cuda; print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_builtin_backend_availability_is_reported_with_a_reason():
    """Here (no GPU in CI): unavailable with a reason naming CuPy or the driver; the reason reaches
    errors of tensor creation on "cuda"."""
    cuda = registry.compute["cuda"]
    ok, reason = cuda.is_available()
    if ok:
        pytest.skip("a usable CUDA backend is present on this machine")
    assert reason and ("CuPy" in reason or "CUDA" in reason)
    with pytest.raises(RuntimeError, match="no available backend for device type 'cuda'"):
        tensorplug.zeros(1, device="cuda")
    assert tensorplug.cuda.is_available() is False and tensorplug.cuda.device_count() == 0


def _raising(exc):
    def load():
        raise exc
    return load


@pytest.mark.parametrize("exc, words", [
    (ImportError("No module named 'cupy'"), "CuPy is not importable (ImportError: No module named 'cupy')"),
    (OSError("libcudart.so.12: cannot open shared object file"), "CuPy is not importable (OSError"),
])
def test_unavailable_without_cupy(exc, words):
    """A failing CuPy import is caught and reported, with how to install the extra."""
    ok, reason = CudaBackend(modules=_raising(exc)).is_available()
    assert ok is False and words in reason and "tensorplug[cuda]" in reason
    assert CudaBackend(modules=_raising(exc)).version == "-"


def test_unavailable_without_driver(standin_state):
    """cudaGetDeviceCount failing (no driver) is reported with CuPy's message."""
    fake_cupy.reset(driver_error="cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    ok, reason = make_standin().is_available()
    assert not ok and reason.startswith("no usable CUDA driver") and "cudaErrorInsufficientDriver" in reason


def test_unavailable_without_device(standin_state):
    fake_cupy.reset(devices=0)
    ok, reason = make_standin().is_available()
    assert not ok and "no CUDA device" in reason


def test_unavailable_when_a_kernel_cannot_run(standin_state, monkeypatch):
    """A first kernel failing (e.g. NVRTC missing) makes the backend unavailable, with the error."""
    def broken(*a, **k):
        raise RuntimeError("CuPy failed to load libnvrtc.so.12")
    monkeypatch.setattr(fake_cupy, "arange", broken)
    ok, reason = make_standin().is_available()
    assert not ok and "cannot run a kernel" in reason and "libnvrtc" in reason


def test_standin_backend_is_available_and_complete(standin_state):
    """Over the stand-in the backend is available, sees 2 devices and implements every required
    kernel and every optional kernel natively."""
    b = make_standin()
    assert b.is_available() == (True, "")
    assert b.device_count() == 2
    status = b.kernel_status()
    assert [n for n in REQUIRED if status[n] != "native"] == []
    # the fused CPU kernels of the performance work (transformer block, RNN layers, attention, cross_entropy,
    # the Adam step) have no CUDA version yet: on CUDA they run through their decompositions (correct, not
    # fused); every other optional kernel is native
    from tensorplug.dispatch import (optional_attention, optional_loss, optional_optim, optional_rnn,
                                     optional_transformer)
    decomposed = (set(optional_transformer.OPTIONAL) | set(optional_rnn.OPTIONAL) | set(optional_attention.OPTIONAL)
                  | set(optional_loss.OPTIONAL) | set(optional_optim.OPTIONAL)
                  | {"conv_weight"})       # conv_weight: conv's weight gradient
    assert [n for n, s in status.items() if s != "native" and n not in decomposed] == []
    assert all(status[n] == "decomposed" for n in decomposed)


def test_nccl_unavailable_reasons(standin_state):
    """nccl: unavailable with a reason when CuPy or cupy.cuda.nccl is missing."""
    ok, reason = NcclBackend(modules=_raising(ImportError("No module named 'cupy'"))).is_available()
    assert not ok and "CuPy is not importable" in reason
    ok, reason = NcclBackend(modules=_raising(ImportError(
        "cupy.cuda.nccl is not usable: NCCL is not installed"))).is_available()
    assert not ok and "cupy.cuda.nccl is not usable" in reason
    builtin = registry.communication["nccl"]
    ok, reason = builtin.is_available()
    if not ok:
        assert reason


# rows are parsed: wide enough that nothing wraps (a child of pytest can inherit COLUMNS=80 from the C-level
# environment, which readline sets, even where os.environ lacks it)
WIDE = {**os.environ, "COLUMNS": "400"}


def test_cli_shows_the_cuda_kernel_table_without_cupy():
    """`tensorplug backends show cuda` describes the backend (every kernel native) even where CuPy is
    missing, with the reason it is unavailable."""
    out = subprocess.run([sys.executable, "-m", "tensorplug", "backends", "show", "cuda"], capture_output=True,
                         text=True, timeout=120, env=WIDE)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cuda: compute backend, device cuda" in out.stdout and "0 missing" in out.stdout
    if not registry.compute["cuda"].is_available()[0]:
        assert "unavailable: " in out.stdout


def test_cli_lists_cuda_and_nccl_with_reasons():
    """`tensorplug backends list` shows cuda and nccl, with availability or the reason."""
    out = subprocess.run([sys.executable, "-m", "tensorplug", "backends", "list"], capture_output=True, text=True,
                         timeout=120, env=WIDE)
    assert out.returncode == 0, out.stderr
    lines = {ln.split()[0]: ln for ln in out.stdout.splitlines() if ln.strip()}
    assert "cuda" in lines and "nccl" in lines
