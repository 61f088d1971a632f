"""The tracer: records the ops one forward pass runs, as ONNX nodes.

While exporting (and only then) the public op functions are temporarily replaced by recording
wrappers: every op function of `tensorplug.ops` (and its `tensorplug.*` / `nn.functional` spellings,
wherever a module holds them), the op methods and operators of `Tensor`, and `nn.Module.__call__`
(for the module scopes in node names and the layers mapped as a whole, e.g. nn.LSTM). Nothing is
patched outside an export, so ordinary calls pay nothing.

A wrapper called from user code (depth 0) with an op that has a mapping runs the op with recording
suspended (so the ops it is built from are not recorded again) and appends the mapping's nodes. An op
without a mapping is traced *through*: the ops it calls are recorded instead, and if it still
produced a tensor the graph has no value for (it computed with kernels directly) or changed a traced
tensor in place, that is `UnsupportedOperatorError` naming it. Ops whose inputs are all constants
are folded (not recorded; their results become constants when used).
"""
from __future__ import annotations

import sys
import types

from ..tensor import Tensor, Size
from ._symint import SymInt
from .errors import UnsupportedOperatorError

_active = None          # the Trace while an export runs its forward

# Tensor attributes that are no ops (metadata, conversions to Python, autograd bookkeeping)
_NOT_OPS = frozenset((
    "size", "dim", "ndimension", "numel", "nelement", "element_size", "item", "tolist", "numpy",
    "requires_grad_", "retain_grad", "register_hook", "register_post_accumulate_grad_hook", "backward",
    "is_contiguous", "is_floating_point", "is_complex", "is_signed", "data_ptr", "storage_offset", "stride",
    "get_device", "is_set_to", "untyped_storage", "storage", "share_memory_", "is_shared", "is_pinned",
    "pin_memory", "__repr__", "__str__", "__format__", "__hash__", "__bool__", "__int__", "__float__",
    "__index__", "__len__", "__array__", "__reduce_ex__", "__reduce__", "__deepcopy__", "__copy__",
    "__setstate__", "__getstate__", "__dlpack__", "__dlpack_device__", "__contains__", "__getattr__",
    "__new__", "__init__", "__init_subclass__", "__class_getitem__", "__sizeof__", "__dir__", "equal",
    "allclose", "is_nonzero", "type", "is_leaf", "new_tensor", "record_stream"))
_MUTATING_DUNDERS = frozenset(("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                               "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
                               "__irshift__", "__imatmul__"))
_OP_DUNDERS = frozenset((
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__neg__", "__pos__",
    "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__and__",
    "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__",
    "__rrshift__", "__matmul__", "__rmatmul__", "__getitem__", "__iter__")) | _MUTATING_DUNDERS


def _mutates(name):
    return name in _MUTATING_DUNDERS or (name.endswith("_") and not name.endswith("__"))


def _walk(x):
    """Tensors and SymInts in an argument structure."""
    if isinstance(x, (Tensor, SymInt)):
        yield x
    elif isinstance(x, (tuple, list)):
        for a in x:
            yield from _walk(a)
    elif isinstance(x, dict):
        for a in x.values():
            yield from _walk(a)
    elif isinstance(x, slice):
        yield from _walk((x.start, x.stop, x.step))


class Trace:
    """One export's recording state: the graph, the op table, and the patches to undo."""

    def __init__(self, graph, table, module_table):
        self.g = graph
        self.table = table                  # op name -> symbolic(g, out, *args, **kwargs)
        self.module_table = module_table    # module class -> symbolic(g, out, module, *args, **kwargs)
        self.depth = 0
        self.module_names = {}              # id(module) -> its qualified name in the exported model
        self._undo = []

    # -- recording ---------------------------------------------------------------------------------------
    def dynamic_in(self, args, kwargs):
        g = self.g
        found = False
        for x in _walk((args, kwargs)):
            if isinstance(x, SymInt) or g.is_dynamic(x):
                found = True
            elif x.grad_fn is not None:
                escaped(g, x)
        return found

    def bind(self, out, names):
        if isinstance(out, Tensor):
            self.g.bind(out, names)
        elif isinstance(out, (tuple, list)):
            for o, n in zip(out, names):
                if n is not None:
                    self.bind(o, n)

    def call(self, name, fn, args, kwargs):
        """fn(*args, **kwargs) as the op `name`, recorded (see the module docstring)."""
        sym = self.table.get(name)
        if sym is None:
            out = fn(*args, **kwargs)
            if name not in _NOT_OPS and self.dynamic_in(args, kwargs):
                self._check_unmapped(name, out)
            return out
        self.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        if self.dynamic_in(args, kwargs) or not self.g.fold:
            self.bind(out, sym(self.g, out, *args, **kwargs))
        return out

    def _check_unmapped(self, name, out):
        g = self.g
        if _mutates(name):
            raise UnsupportedOperatorError(name, g.opset)
        for t in _walk(out):
            if isinstance(t, Tensor) and not g.is_dynamic(t) and id(t) not in g.named:
                raise UnsupportedOperatorError(name, g.opset)

    # -- patching ----------------------------------------------------------------------------------------
    def _set(self, owner, attr, new):
        self._undo.append((owner, attr, owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)))
        setattr(owner, attr, new)

    def restore(self):
        while self._undo:
            owner, attr, old = self._undo.pop()
            setattr(owner, attr, old)

    def _patch_class(self, cls, originals, wrap):
        """Op functions a class holds (`_fn = staticmethod(F.conv2d)` in nn.Conv2d)."""
        for attr, obj in list(cls.__dict__.items()):
            fn = obj.__func__ if isinstance(obj, staticmethod) else obj
            hit = originals.get(id(fn))
            if hit is not None:
                w = wrap(fn, hit[1])
                self._set(cls, attr, staticmethod(w) if isinstance(obj, staticmethod) else w)

    def patch(self, extra_modules=()):
        from ..ops import _argcheck
        wrappers = {}                      # id(original) -> wrapper

        def wrap(fn, name):
            w = wrappers.get(id(fn))
            if w is None:
                w = wrappers[id(fn)] = _op_wrapper(fn, name)
            return w

        # the op functions, by the names their families publish
        originals = {}
        for mod_name, mod in list(sys.modules.items()):
            if mod_name.startswith("tensorplug.ops.") and mod is not None:
                for name in (*getattr(mod, "PUBLIC", ()), *getattr(mod, "FUNCTIONAL", ())):
                    fn = getattr(mod, name, None)
                    if isinstance(fn, types.FunctionType) and id(fn) not in originals:
                        originals[id(fn)] = (fn, name)
        for fn, name in list(originals.values()):
            typed = _argcheck._WRAPPED.get(fn)
            if typed is not None:
                originals.setdefault(id(typed), (typed, name))
        # ... replaced wherever a module holds them (module globals are what calls look up)
        scanned = [m for n, m in list(sys.modules.items()) if m is not None and (n == "tensorplug"
                   or n.startswith("tensorplug.") or n == "torch" or n.startswith("torch."))]
        seen = set()
        for mod in (*scanned, *extra_modules):
            if id(mod) in seen:
                continue
            seen.add(id(mod))
            d = getattr(mod, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for attr, obj in list(d.items()):
                hit = originals.get(id(obj))
                if hit is not None:
                    self._set(mod, attr, wrap(obj, hit[1]))
                elif isinstance(obj, type) and obj.__module__ == mod.__name__ and obj is not Tensor:
                    self._patch_class(obj, originals, wrap)
        # Tensor's op methods and operators
        for attr, obj in list(Tensor.__dict__.items()):
            if attr in _NOT_OPS or (attr.startswith("_") and attr not in _OP_DUNDERS):
                continue
            if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
                hit = originals.get(id(obj))
                name = attr if (attr in self.table or hit is None) else hit[1]
                self._set(Tensor, attr, _op_wrapper(obj, name))
            elif isinstance(obj, property) and attr in ("T", "mT", "H", "mH"):
                self._set(Tensor, attr, property(_op_wrapper(obj.fget, attr)))
        self._set(Tensor, "size", _traced_size(Tensor.__dict__["size"]))
        self._set(Tensor, "shape", property(_traced_size(Tensor.__dict__["shape"].fget)))
        from ..nn.modules.module import Module
        self._set(Module, "__call__", _module_wrapper(Module.__dict__["__call__"]))


def escaped(g, t):
    """t was computed from the inputs by an op the tracer did not see (the export's floating-point
    inputs require grad while tracing, parameters do not, so such a tensor has a grad_fn)."""
    op = t.grad_fn.name()
    op = op[:-len("Backward0")] if op.endswith("Backward0") else op
    raise UnsupportedOperatorError(op, g.opset, "it was computed by an op the tracer did not record")


def _op_wrapper(fn, name):
    def op(*args, **kwargs):
        tr = _active
        if tr is None or tr.depth:
            return fn(*args, **kwargs)
        return tr.call(name, fn, args, kwargs)
    op.__name__ = getattr(fn, "__name__", name)
    op.__qualname__ = getattr(fn, "__qualname__", name)
    op.__doc__ = getattr(fn, "__doc__", None)
    op.__wrapped__ = fn
    return op


def _size_of(name, i, opset):
    def build(g):
        if opset >= 15:
            return g.op("Shape", name, start=i, end=i + 1)
        return g.op("Gather", g.op("Shape", name), g.ints([i]), axis=0)
    return build


def _traced_size(fn):
    """Tensor.size / Tensor.shape giving SymInts for traced tensors under dynamic axes."""
    def size(self, dim=None):
        s = fn(self) if dim is None else fn(self, dim)
        tr = _active
        if tr is None or tr.depth or not tr.g.dynamic or not tr.g.is_dynamic(self):
            return s
        name, opset = tr.g.v(self), tr.g.opset
        if isinstance(s, tuple):
            return Size(SymInt(v, _size_of(name, i, opset)) for i, v in enumerate(s))
        i = dim + self.ndim if dim < 0 else dim
        return SymInt(s, _size_of(name, i, opset))
    size.__name__ = fn.__name__
    return size


def _module_wrapper(call):
    def __call__(self, *args, **kwargs):
        tr = _active
        if tr is None:
            return call(self, *args, **kwargs)
        g = tr.g
        g.push_scope(tr.module_names.get(id(self), ""))
        try:
            sym = tr.module_table.get(type(self)) if tr.depth == 0 else None
            if sym is None:
                return call(self, *args, **kwargs)
            tr.depth += 1
            try:
                out = call(self, *args, **kwargs)
            finally:
                tr.depth -= 1
            if tr.dynamic_in(args, kwargs) or not g.fold:
                tr.bind(out, sym(g, out, self, *args, **kwargs))
            return out
        finally:
            g.pop_scope()
    return __call__
