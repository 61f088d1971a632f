"""`import tensorplug.onnx` (and `import torch.onnx` through the alias) needs no onnx package;
export then raises ImportError naming the extra to install."""
from __future__ import annotations

import subprocess
import sys

_SCRIPT = r"""
import sys
sys.modules["onnx"] = None                  # as if the package were not installed
import tensorplug, tensorplug.onnx
from tensorplug.compat.alias import alias_torch
alias_torch()
import torch.onnx
assert torch.onnx is tensorplug.onnx and "onnx" not in {m for m in sys.modules if sys.modules[m] is not None}
try:
    tensorplug.onnx.export(tensorplug.nn.Linear(2, 2), (tensorplug.randn(1, 2),), "never-written.onnx")
except ImportError as e:
    from tensorplug.utils.collect_env import pip_install_command
    assert pip_install_command("onnx") in str(e), str(e)
    print("ImportError:", e)
else:
    raise SystemExit("export did not raise")
"""


def test_import_without_onnx_and_export_names_the_extra(tmp_path):
    """Blocked onnx module: the import works, export's ImportError carries the pip command."""
    r = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[onnx]" in r.stdout and "pip install" in r.stdout
    assert not (tmp_path / "never-written.onnx").exists()
