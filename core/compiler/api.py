"""The public calls: compile (functions, modules, as a decorator), disable, is_compiling, reset."""
from __future__ import annotations

import functools

from . import capture as _capture

BACKENDS = ("inductor", "eager", "aot_eager")
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def list_backends(exclude_tags=None):
    """The backend names compile accepts ("inductor": fused replay; "eager" / "aot_eager": replay as
    captured)."""
    return sorted(BACKENDS)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """Compile a function or module: its forward (and backward) captured once per guard and replayed.

    mode is accepted for PyTorch's names (all behave alike here); dynamic is accepted, and every new
    shape is captured anew (up to tensorplug._dynamo.config.cache_size_limit). Without `model`, a
    decorator. Returns an OptimizedModule for a Module, else a compiled function."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    _check_options(backend, mode, options)
    if not callable(model):
        raise RuntimeError(f"tensorplug.compile: expected a function or a Module, got {type(model).__name__}")
    from ..nn.modules.module import Module
    from .compiled import CompiledFunction
    kw = dict(backend=backend, mode=mode, fullgraph=fullgraph, dynamic=dynamic, options=options)
    if isinstance(model, Module):
        from .optimized_module import OptimizedModule
        return OptimizedModule(model, CompiledFunction(model, module=model, **kw), disable=disable)
    if disable:
        return model
    return CompiledFunction(model, **kw)


def _check_options(backend, mode, options):
    if callable(backend):
        raise NotImplementedError("tensorplug.compile: custom backend callables are not supported; "
                                  f"use one of {list_backends()}")
    if backend not in BACKENDS:
        raise ValueError(f"tensorplug.compile: unknown backend {backend!r}; choose one of {list_backends()}")
    if mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(m for m in MODES if m)}")
    if options is not None and mode not in (None, "default"):
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")


def disable(fn=None, recursive=True, *, reason=None):
    """`fn` never captured: inside a compiled function its call ends the capture (a graph break, as in
    PyTorch) and it runs eagerly. As a decorator with or without arguments."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    from .compiled import CompiledFunction
    if isinstance(fn, CompiledFunction):
        fn._disabled = True
        return fn

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        cap = _capture.active()
        if cap is not None:
            cap.break_(f"call of a torch.compiler.disable'd function {getattr(fn, '__qualname__', fn)!r}"
                       + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)
    eager._torchdynamo_disable = True
    return eager


def is_compiling() -> bool:
    """True while tensorplug.compile captures (the Python of a compiled function runs only then)."""
    return _capture.active() is not None


is_dynamo_compiling = is_compiling


def reset():
    """Forget every compiled entry and the counters (torch._dynamo.reset / torch.compiler.reset)."""
    from .compiled import reset as _reset
    _reset()
