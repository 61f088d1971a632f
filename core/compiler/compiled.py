"""`tensorplug.compile`: capture a forward once per guard, replay it as one straight-line function.

A compiled callable keeps a cache of entries keyed by its guards: grad mode, autocast, the default
dtype, each tensor argument's shape / dtype / device / requires_grad, the other arguments' values,
the training flags of the module's submodules, and its parameters' and buffers' identities and
metadata. A call whose guards have no entry is captured: it runs eagerly (that call's results are
the eager ones) while capture.py records its kernel calls — the forward, then, when some output
needs a gradient, the frontend's own backward rules run once on placeholder gradients (the joint
graph) — and later calls with the same guards replay the tapes:

    outputs = forward tape(arguments' and parameters' arrays)      # no per-op frontend work
    backward: grads = backward tape(output grads, saved arrays)    # one autograd node for it all

A capture that meets something it cannot record (capture.GraphBreak) leaves that guard to plain
eager execution, counted in `tensorplug._dynamo.utils.counters["graph_break"]` and logged with
TORCH_LOGS=graph_breaks; `fullgraph=True` makes it an error. Once `cache_size_limit` entries exist
for one callable, new guards run eagerly after one warning.

Not captured, as with a plain tape: Python state the forward reads other than the guards above (a
counter, a global number), and tensors reached through globals other than the function's own
global names. Double backward through a compiled function is an error, as in PyTorch.
"""
from __future__ import annotations

import functools
import itertools
import os
import sys
import warnings

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ..autograd import grad_mode
from ..autograd.graph import record_multi
from ..tensor import Tensor, _make
from .._dynamo import config as _config
from .._dynamo.utils import counters
from . import capture as _capture
from .tape import GuardFailed

_gstate = grad_mode.state
_ids = itertools.count()


class Unsupported(RuntimeError):
    """A graph break under fullgraph=True (torch._dynamo.exc.Unsupported)."""


def _log(kind, message):
    logs = os.environ.get("TORCH_LOGS", "") + "," + os.environ.get("TENSORPLUG_COMPILE_LOGS", "")
    if kind in logs.replace("+", "").split(","):
        sys.stderr.write(f"[tensorplug.compile] {kind}: {message}\n")


# -- flattening ---------------------------------------------------------------------------------------
def _flatten(x, tensors):
    """A hashable structure of `x` with tensors replaced by their index in `tensors` (appended)."""
    if isinstance(x, Tensor):
        tensors.append(x)
        return ("T", len(tensors) - 1)
    t = type(x)
    if t in (list, tuple):
        return (t.__name__, tuple(_flatten(e, tensors) for e in x))
    if t is dict:
        return ("dict", tuple((k, _flatten(v, tensors)) for k, v in x.items()))
    try:
        hash(x)
        return ("v", t, x)
    except TypeError:
        return ("id", t, id(x))


def _unflatten(spec, tensors, values):
    kind = spec[0]
    if kind == "T":
        return tensors[spec[1]]
    if kind in ("list", "tuple"):
        seq = [_unflatten(e, tensors, values) for e in spec[1]]
        return seq if kind == "list" else tuple(seq)
    if kind == "dict":
        return {k: _unflatten(v, tensors, values) for k, v in spec[1]}
    return values[spec[1]]


def _out_spec(x, tensors, values):
    """Like _flatten, for results: non-tensor leaves kept by index in `values`."""
    if isinstance(x, Tensor):
        tensors.append(x)
        return ("T", len(tensors) - 1)
    t = type(x)
    if t in (list, tuple):
        return (t.__name__, tuple(_out_spec(e, tensors, values) for e in x))
    if t is dict:
        return ("dict", tuple((k, _out_spec(v, tensors, values)) for k, v in x.items()))
    if hasattr(x, "_fields") and isinstance(x, tuple):      # a namedtuple: rebuilt as itself
        raise _capture.GraphBreak(f"a {t.__name__} (namedtuple) result")
    values.append(x)
    return ("c", len(values) - 1)


def _tensor_guard(t):
    return (t._data.shape, t._dtype, id(t._k), t._rg)


class _Entry:
    """The tapes of one guard: forward (and backward when gradients flow)."""

    def __init__(self):
        self.forward = None         # Tape: inputs = argument / state / global slots; outputs = results + saved
        self.backward = None        # Tape: inputs = grad slots + saved slots; outputs = input grads
        self.eager_reason = None    # a graph break: run eagerly
        self.n_saved = 0


class CompiledFunction:
    """`fn` (a function, or a module's call) compiled; called like it."""

    def __init__(self, fn, *, module=None, backend="inductor", mode=None, fullgraph=False, dynamic=None,
                 options=None):
        self.fn = fn
        self.module = module
        self.backend = backend
        self.mode = mode
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.options = dict(options or {})
        self.cache = {}
        self._limit_warned = False
        self._disabled = False
        self._globals = _global_names(fn) if module is None else ({}, (), (), None)
        functools.update_wrapper(self, fn, updated=())
        _registry.append(self)

    # -- guards ---------------------------------------------------------------------------------------
    def _state(self):
        """(tensors the forward reads from the module and its globals, the training flags of every
        module met on the way): both are guards."""
        from ..nn.modules.module import Module
        state, seen, flags = [], set(), []

        def add(t):
            if id(t) not in seen:
                seen.add(id(t))
                state.append(t)

        def add_module(module):
            for m in module.modules():
                flags.append(m.training)
                for d in (m._parameters, m._buffers):
                    for t in d.values():
                        if t is not None:
                            add(t)
        if self.module is not None:
            add_module(self.module)
        g, names, cells, owner = self._globals
        values = [g.get(name) for name in names]
        for cell in cells:
            try:
                values.append(cell.cell_contents)
            except ValueError:           # a cell not yet filled
                pass
        if owner is not None:
            values.append(owner)
        for v in values:
            if isinstance(v, Tensor):
                add(v)
            elif isinstance(v, Module):
                add_module(v)
        return state, tuple(flags)

    def _key(self, spec, tensors, state, flags):
        return (_gstate.enabled, _amp.on, _dt.get_default_dtype(), spec, flags,
                tuple(_tensor_guard(t) for t in tensors),
                tuple((id(t), *_tensor_guard(t)) for t in state))

    # -- calls ----------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._disabled or _config.disable or _capture.active() is not None:
            return self.fn(*args, **kwargs)
        tensors = []
        spec = _flatten((args, kwargs), tensors)
        state, flags = self._state()          # one walk of the modules: their tensors and training flags
        key = self._key(spec, tensors, state, flags)
        entry = self.cache.get(key)
        if entry is None:
            if len(self.cache) >= _config.cache_size_limit:
                if not self._limit_warned:
                    self._limit_warned = True
                    warnings.warn(f"tensorplug.compile: {self._name()} hit config.cache_size_limit "
                                  f"({_config.cache_size_limit}); new shapes / dtypes / modes run eagerly. "
                                  "Raise tensorplug._dynamo.config.cache_size_limit to compile more.",
                                  stacklevel=2)
                counters["stats"]["cache_limit_eager_calls"] += 1
                return self.fn(*args, **kwargs)
            if self.cache:
                counters["stats"]["recompiles"] += 1
                _log("recompiles", f"{self._name()}: new guards (entry {len(self.cache) + 1})")
            entry = self.cache[key] = _Entry()
            return self._capture(entry, args, kwargs, tensors, state)
        if entry.eager_reason is not None:
            return self.fn(*args, **kwargs)
        try:
            return self._replay(entry, tensors, state)
        except GuardFailed as e:
            counters["stats"]["guard_failures"] += 1
            _log("guards", f"{self._name()}: {e} answered differently; this call runs eagerly")
            return self.fn(*args, **kwargs)

    def _name(self):
        return getattr(self.fn, "__qualname__", None) or type(self.fn).__name__

    def _tables(self, tensors, state):
        from ..ops.creation import resolve_device
        tables = [t._k for t in tensors] + [t._k for t in state]
        tables.append(resolve_device(None)[0])
        return tables

    def _capture(self, entry, args, kwargs, tensors, state):
        counters["stats"]["captures"] += 1
        inputs = [*tensors, *state]
        # an argument inside a graph (not a leaf) becomes a leaf, so the backward capture stops at it
        leaves = [t.detach().requires_grad_(True) if t.grad_fn is not None else t for t in tensors]
        call_args, call_kwargs = _rebuild_args(args, kwargs, tensors, leaves)
        modules = list(self.module.modules()) if self.module is not None else []
        before = [dict(m.__dict__) for m in modules]
        with _capture.Capture(self._tables(tensors, state)) as cap:
            in_slots = [cap.add_input(t._data, ("in", i)) for i, t in enumerate(inputs)]
            result = self.fn(*call_args, **call_kwargs)
            fwd_end = len(cap.ops)
            out_tensors, out_values = [], []
            side_effects = []
            try:
                out_spec = _out_spec(result, out_tensors, out_values)
                # attributes the forward set on its modules (llama2.c's `self.last_loss = ...`): a tensor is
                # one more output of the tapes, set again after every replay; anything else is a graph break
                for m, old in zip(modules, before):
                    for name, value in m.__dict__.items():
                        if name in old and old[name] is value:
                            continue
                        if not isinstance(value, Tensor):
                            raise _capture.GraphBreak(f"forward sets {type(m).__name__}.{name} to a "
                                                      f"{type(value).__name__}")
                        side_effects.append((m, name, len(out_tensors)))
                        out_tensors.append(value)
            except _capture.GraphBreak as e:
                cap.break_(e.reason)
            if cap.broken is None:
                grad_inputs = [(i, t) for i, t in enumerate(leaves) if t._rg] + \
                              [(len(tensors) + j, t) for j, t in enumerate(state) if t._rg]
                diff = [i for i, o in enumerate(out_tensors) if o._rg and o._dtype.category >= 2] \
                    if _gstate.enabled else []
                try:
                    if diff:
                        _check_leaves([out_tensors[i] for i in diff], [t for _, t in grad_inputs])
                    out_slots = [self._out_slot(cap, o) for o in out_tensors]
                    if diff:
                        self._capture_backward(cap, entry, out_tensors, diff, grad_inputs, in_slots)
                    saved = entry.backward.inputs[len(diff):] if entry.backward is not None else []
                    extra = [s for s in saved if s not in in_slots]
                    entry.forward = cap.tape(0, in_slots, out_slots + extra, end=fwd_end)
                    entry.saved_slots = saved
                    # where each saved array comes from on replay: the forward's results or its inputs
                    entry.saved_from = [("in", in_slots.index(s)) if s in in_slots
                                        else ("out", len(out_slots) + extra.index(s)) for s in saved]
                except _capture.GraphBreak as e:
                    cap.break_(e.reason)
        if cap.broken is not None:
            self._graph_break(entry, cap.broken)
            if any(a is not b for a, b in zip(tensors, leaves)):
                return self.fn(*args, **kwargs)     # the capture ran on detached arguments: run again
            return result
        entry.out_spec, entry.out_values, entry.side_effects = out_spec, out_values, side_effects
        entry.out_meta = [(o._dtype, o._k, o._dev) for o in out_tensors]
        entry.diff = diff
        entry.grad_inputs = grad_inputs if diff else []
        if self.backend == "inductor":
            self._fuse(entry, cap)
        entry.forward.compile()
        if entry.backward is not None:
            entry.backward.compile()
        counters["stats"]["unique_graphs"] += 1
        _log("graph", f"{self._name()}: forward {len(entry.forward)} kernels"
             + (f", backward {len(entry.backward)}" if entry.backward is not None else ""))
        # this call's results: the eager arrays, joined to autograd through the backward tape
        arrays = [o._data for o in out_tensors]
        saved = [cap.arrays[s] for s in entry.saved_slots]
        return self._wrap(entry, arrays, saved, inputs)

    @staticmethod
    def _fuse(entry, cap):
        """Pointwise chains of both tapes as single backend kernels (fusion.py), when every kernel
        table of the capture belongs to one backend that can fuse."""
        from .fusion import fuse
        backends = {id(t["__backend__"]): t["__backend__"] for t in cap.tables}
        if len(backends) != 1:
            return
        backend = next(iter(backends.values()))
        meta = {i: (tuple(a.shape), a.dtype.name) for i, a in enumerate(cap.arrays)}
        entry.forward, n_fwd = fuse(entry.forward, meta, backend)
        n_bwd = 0
        if entry.backward is not None:
            entry.backward, n_bwd = fuse(entry.backward, meta, backend)
        entry.fused = (n_fwd, n_bwd)
        counters["stats"]["fused_kernels"] += n_fwd + n_bwd

    @staticmethod
    def _out_slot(cap, o):
        s = cap.slot(o._data)
        if s is None:
            raise _capture.GraphBreak("a result tensor was not made by the captured kernels")
        return s

    def _capture_backward(self, cap, entry, out_tensors, diff, grad_inputs, in_slots):
        from .. import autograd
        start = len(cap.ops)
        seeds = []
        with cap.paused():
            for i in diff:
                o = out_tensors[i]
                seeds.append(_make(o._k["full"](o._data.shape, 1.0, o._dtype.name), o._dtype, o._k, o._dev))
        grad_slots = [cap.add_input(g._data, ("grad", n)) for n, g in enumerate(seeds)]
        grads = autograd.grad([out_tensors[i] for i in diff], [t for _, t in grad_inputs], grad_outputs=seeds,
                              allow_unused=True, retain_graph=True)
        if cap.broken is not None:
            raise _capture.GraphBreak(cap.broken)
        produced = set(grad_slots)
        for op in cap.ops[start:]:
            produced.update(op.slots_written())
        saved = []
        for op in cap.ops[start:]:
            for s in op.slots_read():
                if s not in produced and s not in cap.constants and s not in saved:
                    saved.append(s)
        entry.grad_present = [g is not None for g in grads]
        grad_out = []
        for g in grads:
            if g is not None:
                s = cap.slot(g._data)
                if s is None:
                    raise _capture.GraphBreak("a gradient was not made by the captured kernels")
                if s not in produced and s not in saved and s not in cap.constants:
                    saved.append(s)
                grad_out.append(s)
        entry.backward = cap.tape(start, grad_slots + saved, grad_out)

    def _graph_break(self, entry, reason):
        entry.eager_reason = reason
        counters["graph_break"][reason] += 1
        _log("graph_breaks", f"{self._name()}: {reason}")
        if self.fullgraph:
            raise Unsupported(f"tensorplug.compile(fullgraph=True): graph break in {self._name()}: {reason}")

    def _replay(self, entry, tensors, state):
        inputs = [*tensors, *state]
        res = entry.forward.compile()(*[t._data for t in inputs])
        n = len(entry.out_meta)
        arrays = res[:n]
        saved = [res[i] if kind == "out" else inputs[i]._data for kind, i in entry.saved_from] \
            if entry.backward is not None else []
        return self._wrap(entry, arrays, saved, inputs)

    def _wrap(self, entry, arrays, saved, inputs):
        outs = [_make(a, dt, k, dev) for a, (dt, k, dev) in zip(arrays, entry.out_meta)]
        if entry.backward is not None and _gstate.enabled:
            diff_outs = [outs[i] for i in entry.diff]
            grad_inputs = [inputs[i] for i, _ in entry.grad_inputs]
            record_multi("CompiledFunctionBackward", diff_outs, grad_inputs,
                         _backward_rule(entry, saved, grad_inputs))
        for module, name, i in entry.side_effects:
            module.__dict__[name] = outs[i]
        return _unflatten(entry.out_spec, outs, entry.out_values)


def _backward_rule(entry, saved, grad_inputs):
    tape = entry.backward.compile()
    present = entry.grad_present

    def vjp(grads):
        if _gstate.enabled:
            raise RuntimeError("torch.compile with aot_autograd does not currently support double backward")
        res = tape(*[g._data for g in grads], *saved)
        out, it = [], iter(res)
        for t, has in zip(grad_inputs, present):
            out.append(_make(next(it), t._dtype, t._k, t._dev) if has else None)
        return tuple(out)
    return vjp


def _rebuild_args(args, kwargs, tensors, leaves):
    """args / kwargs with each tensor of `tensors` replaced by the same-position one of `leaves`."""
    if all(a is b for a, b in zip(tensors, leaves)):
        return args, kwargs
    swap = {id(a): b for a, b in zip(tensors, leaves)}

    def sub(x):
        if isinstance(x, Tensor):
            return swap.get(id(x), x)
        if type(x) in (list, tuple):
            return type(x)(sub(e) for e in x)
        if type(x) is dict:
            return {k: sub(v) for k, v in x.items()}
        return x
    return sub(args), sub(kwargs)


def _global_names(fn):
    """(globals, the global names its code reads, its closure cells, the object of a bound method): the
    tensors found there at each call, and the parameters and buffers of the modules found there, are
    guarded by identity and read by the replay like a module's parameters."""
    owner = getattr(fn, "__self__", None)             # a bound method: its object (a Module's state)
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    g = getattr(fn, "__globals__", None)
    if code is None or g is None:
        return {}, (), (), owner
    return g, tuple(code.co_names), tuple(fn.__closure__ or ()), owner


def _check_leaves(outputs, grad_inputs):
    """GraphBreak unless every leaf requiring grad that the outputs depend on is one of grad_inputs
    (else the compiled backward would leave its .grad untouched)."""
    known = {id(t) for t in grad_inputs}
    seen, todo = set(), [o.grad_fn for o in outputs]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None and node.vjp is None:
            if id(var) not in known:
                raise _capture.GraphBreak("a tensor that requires grad is reached other than through an argument, a "
                                          "global name, or a parameter of the module")
            continue
        todo.extend(e[0] for e in node.edges if e is not None)


_registry: list = []      # every compiled callable, for reset()


def reset():
    """Forget every compiled entry (torch._dynamo.reset): the next calls capture again."""
    for c in _registry:
        c.cache.clear()
        c._limit_warned = False
    for group in counters.values():
        group.clear()
