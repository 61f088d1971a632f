"""The module layout of PyTorch's mixed precision: torch.amp, torch.cpu.amp, torch.cuda.amp; and that
`import tensorplug` loads only the autocast state."""
from __future__ import annotations

import subprocess
import sys

import tensorplug as torch


def test_import_stays_lean():
    code = ("import sys, tensorplug; print(sorted(m for m in sys.modules if m.startswith(("
            "'tensorplug.amp', 'tensorplug.cpu'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['tensorplug.amp', 'tensorplug.amp.state']"


def test_from_imports_as_in_pytorch():
    code = ("from tensorplug.cuda.amp import GradScaler, autocast, custom_fwd, custom_bwd\n"
            "from tensorplug.cpu.amp import GradScaler as G2, autocast as a2\n"
            "from tensorplug.amp import GradScaler as G3, autocast as a3, custom_fwd, is_autocast_available\n"
            "import tensorplug.cuda.amp.grad_scaler, tensorplug.cpu.amp.autocast_mode, tensorplug.amp.grad_scaler\n"
            "import tensorplug.amp.autocast_mode as m\n"
            "assert issubclass(GradScaler, G3) and issubclass(G2, G3) and issubclass(autocast, a3)\n"
            "assert a3 is m.autocast\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_cpu_module():
    assert torch.cpu.is_available() and torch.cpu.device_count() == 1 and torch.cpu.current_device() == "cpu"
    assert torch.cpu.synchronize() is None and torch.cpu.is_initialized()


def test_cuda_amp_common():
    assert torch.cuda.amp.common.amp_definitely_not_available() is True


def test_public_names():
    assert set(torch.amp.__all__) == {"autocast", "custom_bwd", "custom_fwd", "is_autocast_available",
                                      "GradScaler"}
    for name in ("is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
                 "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
                 "autocast_increment_nesting", "autocast_decrement_nesting"):
        assert callable(getattr(torch, name))
