"""ShapeProp: run a GraphModule on example inputs and record each node's tensor metadata.

`node.meta['tensor_meta']` becomes a TensorMetadata (shape, dtype, requires_grad, stride,
memory_format, is_quantized, qparams) for tensor results, the same structure of them for tuples /
lists / dicts of tensors; `node.meta['type']` the result's type.
"""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Tuple

from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: Tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: Dict[str, Any]


def _extract_tensor_metadata(t) -> TensorMetadata:
    import tensorplug
    # tensorplug has no memory formats yet: contiguous_format where it gains one, else None
    fmt = getattr(tensorplug, "contiguous_format", None) if t.is_contiguous() else None
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, tuple(t.stride()), fmt, False, {})


class ShapeProp(Interpreter):
    """Interpreter that stores every tensor result's metadata on its node (see the module docstring)."""

    def run_node(self, n):
        from ...tensor import Tensor
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the module on args (recording metadata); returns its output."""
        return super().run(*args)
