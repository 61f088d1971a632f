"""Sizes read from traced tensors while exporting with dynamic axes.

`x.size(0)` of a traced tensor gives a `SymInt`: the traced (concrete) value as an ordinary int, so
the forward runs unchanged, plus a recipe for computing the size in the exported graph. `B * T`,
`C // n`, `T + 1` ... keep the recipe, so `q.view(B, T, n, C // n)` exports as a Reshape whose shape
is computed from the input instead of the numbers seen while tracing. Other uses (`float(T)`,
`range(T)`) see the plain value, as in PyTorch's tracer.
"""
from __future__ import annotations


class SymInt(int):
    """An int that also knows how to compute itself in the graph, as a 1-element int64 value."""

    def __new__(cls, value, build):
        s = int.__new__(cls, value)
        s._build = build            # build(graph) -> name of an int64 tensor of shape [1]
        s._made = None
        return s

    def onnx_value(self, g):
        if self._made is None or self._made[0] is not g:
            self._made = (g, self._build(g))
        return self._made[1]

    def _binary(self, other, op, value, reflected=False):
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented

        def build(g):
            a, b = g.int_value(self), g.int_value(other)
            return g.op(op, b, a) if reflected else g.op(op, a, b)
        return SymInt(value, build)

    def __add__(self, o):
        return self._binary(o, "Add", int(self) + int(o)) if isinstance(o, int) else int(self) + o

    def __radd__(self, o):
        return self._binary(o, "Add", int(o) + int(self), True) if isinstance(o, int) else o + int(self)

    def __sub__(self, o):
        return self._binary(o, "Sub", int(self) - int(o)) if isinstance(o, int) else int(self) - o

    def __rsub__(self, o):
        return self._binary(o, "Sub", int(o) - int(self), True) if isinstance(o, int) else o - int(self)

    def __mul__(self, o):
        return self._binary(o, "Mul", int(self) * int(o)) if isinstance(o, int) else int(self) * o

    def __rmul__(self, o):
        return self._binary(o, "Mul", int(o) * int(self), True) if isinstance(o, int) else o * int(self)

    def __floordiv__(self, o):      # sizes are non-negative: ONNX's truncating Div is floor division here
        return self._binary(o, "Div", int(self) // int(o)) if isinstance(o, int) else int(self) // o

    def __rfloordiv__(self, o):
        return self._binary(o, "Div", int(o) // int(self), True) if isinstance(o, int) else o // int(self)

    def __repr__(self):
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):
        return int, (int(self),)
