"""tensorplug.onnx: export a model to ONNX by tracing one forward pass (torch.onnx's classic exporter).

    >>> tensorplug.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["y"],
    ...                        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})

Importing this package needs nothing beyond tensorplug; `export` needs the `onnx` package (the
`onnx` extra) and says how to install it when it is missing.
"""
from __future__ import annotations

from . import errors
from ._exporter import OperatorExportTypes, TrainingMode, export
from .errors import OnnxExporterError

__all__ = ["export", "is_in_onnx_export", "errors", "TrainingMode", "OperatorExportTypes", "OnnxExporterError"]


def is_in_onnx_export() -> bool:
    """Whether an export is tracing the model right now (True inside its forward)."""
    from . import _tracer
    return _tracer._active is not None
