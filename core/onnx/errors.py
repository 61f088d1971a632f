"""The errors of `tensorplug.onnx` (PyTorch's names: torch.onnx.errors)."""
from __future__ import annotations

__all__ = ["OnnxExporterWarning", "SymbolicValueError", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings of the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op ran during the traced forward that has no ONNX mapping."""

    def __init__(self, name: str, version: int, detail: str | None = None):
        msg = f"Exporting the operator '{name}' to ONNX opset version {version} is not supported"
        super().__init__(msg + (f": {detail}" if detail else ""))


class SymbolicValueError(OnnxExporterError):
    """A mapped op got arguments its ONNX mapping cannot express."""
