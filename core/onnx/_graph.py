"""The ONNX graph under construction while tracing: nodes, initializers, and the value each traced
tensor has in it. Plain Python data (the `onnx` package is used only when the model is written), so
tracing needs nothing but NumPy.

Values: a tensor computed from the graph inputs is *dynamic* (`values`); parameters and buffers are
*named* constants (`named`, initializers called by their state-dict names); any other tensor an op
reads becomes an anonymous constant initializer. With constant folding, an op whose inputs are all
constants is not recorded at all: its result is one more constant (the value seen while tracing).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ._symint import SymInt

# ONNX TensorProto element types (fixed by the ONNX spec), by tensorplug dtype name
ONNX_TYPE = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7, "bool": 9, "float16": 10,
             "float64": 11, "complex64": 14, "complex128": 15, "bfloat16": 16}
INT64 = 7


def onnx_type(dtype) -> int:
    return ONNX_TYPE[dtype.name]


def np_dtype(dtype):
    if dtype.name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype("bool" if dtype.name == "bool" else dtype.name)


class Node:
    __slots__ = ("op_type", "inputs", "outputs", "attrs", "name")

    def __init__(self, op_type, inputs, outputs, attrs, name):
        self.op_type, self.inputs, self.outputs, self.attrs, self.name = op_type, inputs, outputs, attrs, name


class Graph:
    """Nodes in execution order; `op` appends one and returns its output name(s)."""

    def __init__(self, opset: int, fold: bool, dynamic: bool):
        self.opset = opset
        self.fold = fold                # ops on constants only are not recorded
        self.dynamic = dynamic          # sizes of traced tensors are SymInts (dynamic axes given)
        self.nodes: list[Node] = []
        self.initializers: dict[str, np.ndarray] = {}
        self.values: dict[int, tuple] = {}      # id(tensor) -> (tensor, name): dynamic values
        self.named: dict[int, tuple] = {}       # id(tensor) -> (tensor, name): parameters and buffers
        self._consts: dict[int, tuple] = {}     # id(tensor) -> (tensor, name): anonymous constants
        self._scope: list[str] = []
        self._counts: dict[str, int] = {}
        self._uid = 0

    # -- names ------------------------------------------------------------------------------------------
    def push_scope(self, name):
        self._scope.append(name)

    def pop_scope(self):
        self._scope.pop()

    def _node_name(self, op_type):
        prefix = "/" + "/".join(s for s in self._scope if s) + "/" if any(self._scope) else "/"
        base = prefix + op_type
        k = self._counts.get(base, 0)
        self._counts[base] = k + 1
        return base if k == 0 else f"{base}_{k}"

    def fresh(self, hint="Constant"):
        self._uid += 1
        return f"onnx::{hint}_{self._uid}"

    # -- nodes -------------------------------------------------------------------------------------------
    def op(self, op_type, *inputs, outputs=1, **attrs):
        """Append an `op_type` node; inputs are names ('' or None: an omitted optional input)."""
        name = self._node_name(op_type)
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(Node(op_type, ["" if i is None else i for i in inputs], outs, attrs, name))
        return outs[0] if outputs == 1 else tuple(outs)

    def const(self, array, hint="Constant"):
        """`array` (a NumPy array or scalar) as a Constant node when small (sizes, scalars: what
        PyTorch's exporter writes as Constant nodes), else as an initializer."""
        array = np.asarray(array)
        if array.size <= 64:
            return self.op("Constant", value=array)
        name = self.fresh(hint)
        self.initializers[name] = array
        return name

    def ints(self, values):
        """A 1-D int64 value of `values` (ints or SymInts): a constant, or a Concat when some are symbolic."""
        values = list(values)
        if not any(isinstance(v, SymInt) for v in values):
            return self.const(np.array([int(v) for v in values], dtype=np.int64))
        return self.op("Concat", *[self.int_value(v) for v in values], axis=0) if len(values) > 1 \
            else self.int_value(values[0])

    def int_value(self, v):
        """A 1-element int64 value of an int or SymInt."""
        if isinstance(v, SymInt):
            return v.onnx_value(self)
        return self.const(np.array([int(v)], dtype=np.int64))

    def scalar(self, value, dtype):
        """A 0-d constant of `value` in tensorplug dtype `dtype`."""
        return self.const(np.array(value, dtype=np_dtype(dtype)))

    # -- tensors -----------------------------------------------------------------------------------------
    def is_dynamic(self, t) -> bool:
        return id(t) in self.values

    def bind(self, t, name):
        self.values[id(t)] = (t, name)

    def v(self, t):
        """The name of tensor t's value: dynamic, a named initializer, or a new constant."""
        hit = self.values.get(id(t))
        if hit is not None:
            return hit[1]
        hit = self.named.get(id(t))
        if hit is not None:
            name = hit[1]
            if name not in self.initializers:
                self.initializers[name] = _host(t)
            return name
        hit = self._consts.get(id(t))
        if hit is None:
            name = self.fresh()                 # a folded result or a tensor made in the forward
            self.initializers[name] = _host(t)
            hit = self._consts[id(t)] = (t, name)   # holding t keeps its id unique
        return hit[1]

    def cast(self, x, dtype):
        """x (a tensor or a Python scalar) as a value of tensorplug dtype `dtype`."""
        if isinstance(x, SymInt):
            x = self.op("Squeeze", x.onnx_value(self), self.ints([0]))
            return x if dtype is _dt.int64 else self.op("Cast", x, to=onnx_type(dtype))
        if not hasattr(x, "_dtype"):
            return self.scalar(x, dtype)
        name = self.v(x)
        return name if x._dtype is dtype else self.op("Cast", name, to=onnx_type(dtype))

    def shape(self, t, start=0, end=None):
        """t.shape[start:end] as a 1-D int64 value: a constant unless exporting with dynamic axes."""
        nd = t.ndim
        end = nd if end is None else end
        if not (self.dynamic and self.is_dynamic(t)):
            return self.ints(tuple(t._data.shape)[start:end])
        if start == 0 and end == nd:
            return self.op("Shape", self.v(t))
        if self.opset >= 15:
            return self.op("Shape", self.v(t), start=start, end=end)
        return self.op("Slice", self.op("Shape", self.v(t)), self.ints([start]), self.ints([end]), self.ints([0]))


def _host(t):
    return np.array(t._host(), copy=True, order="C")
