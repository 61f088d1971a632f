"""Activation checkpointing (torch.utils.checkpoint): trade compute for memory.

`checkpoint(fn, *args)` runs fn, keeps only its inputs and outputs, and frees the activations fn's
backward would need; the backward pass runs fn again (with the random-number state of the first run,
so dropout masks repeat) and differentiates that.

One checkpoint node stands for the whole segment. Its inputs are the tensor arguments that require
grad and every leaf (parameter) the segment's graph reached in the first run, found by walking that
graph before it is dropped; so parameters used inside fn get gradients even when no argument requires
grad (PyTorch's use_reentrant=False). With use_reentrant=True, as in PyTorch, nothing flows when no
argument requires grad (a warning says so) and keyword arguments are refused.
"""
from __future__ import annotations

import warnings

from ..autograd import grad_mode
from ..autograd.graph import AccumulateGrad, record, record_multi
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


def _leaves(outputs, own):
    """Leaf tensors requiring grad reachable from outputs' graph, other than the `own` inputs."""
    seen, stack, found = set(), [o.grad_fn for o in outputs if o.grad_fn is not None], {}
    own_ids = {id(t) for t in own}
    for o in outputs:                      # an output that is itself a leaf (fn returned a parameter)
        if o._rg and o.grad_fn is None and id(o) not in own_ids:
            found[id(o)] = o
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            v = node.variable
            if id(v) not in own_ids:
                found.setdefault(id(v), v)
            continue
        stack.extend(e[0] for e in node.edges if e is not None)
    return list(found.values())


def _rng_states(args, preserve):
    """The states of the default generators fn may draw from: cpu's and those of the args' devices."""
    if not preserve:
        return []
    from ..device import device
    from ..ops.random import default_generator
    devices = {device("cpu")} | {a.device for a in args if isinstance(a, Tensor)}
    gens = [default_generator(d) for d in sorted(devices, key=str)]
    return [(g, g.get_state()) for g in gens]


class _restored_rng:
    def __init__(self, states):
        self.states, self.now = states, []

    def __enter__(self):
        self.now = [(g, g.get_state()) for g, _ in self.states]
        for g, s in self.states:
            g.set_state(s)

    def __exit__(self, *exc):
        for g, s in self.now:
            g.set_state(s)
        return False


def _flat_tensors(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, Tensor)]
    raise TypeError(f"checkpoint: the function must return a Tensor or a tuple of Tensors, not "
                    f"{type(out).__name__}")


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), recomputed during backward instead of keeping its activations."""
    if use_reentrant is None:
        warnings.warn("tensorplug.utils.checkpoint: the use_reentrant parameter should be passed explicitly; "
                      "it defaults to True as in PyTorch, and use_reentrant=False is recommended", stacklevel=2)
        use_reentrant = True
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None and use_reentrant:
        raise ValueError("Passing `context_fn` is only supported when use_reentrant=False.")
    if not grad_mode.state.enabled:
        return function(*args, **kwargs)
    states = _rng_states(args, preserve_rng_state)
    wanted = [a for a in args if isinstance(a, Tensor) and a._rg]

    def detached():
        return [a.detach().requires_grad_(a._rg) if isinstance(a, Tensor) else a for a in args]

    if use_reentrant and not wanted:
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        with grad_mode.no_grad():
            return function(*args, **kwargs)
    first = detached()
    out = function(*first, **kwargs)                 # with grad: finds the leaves fn uses, then drops the graph
    outs = _flat_tensors(out)
    params = _leaves(outs, [a for a in first if isinstance(a, Tensor)])
    edges = wanted + params
    results = [o.detach() for o in outs]
    structure = out
    del outs, first
    if not edges:
        return _rebuild(structure, results)

    def vjp(grads):
        create = grad_mode.state.enabled
        grads = grads if isinstance(grads, (list, tuple)) else [grads]
        with _restored_rng(states), grad_mode.enable_grad():
            # for a differentiable backward (create_graph) the recomputation must hang off the real
            # inputs; otherwise detached copies keep it from walking into the graph upstream
            again = list(args) if create else detached()
            recomputed = _flat_tensors(function(*again, **kwargs))
        mine = [a for a, orig in zip(again, args) if isinstance(orig, Tensor) and orig._rg]
        pairs = [(o, g) for o, g in zip(recomputed, grads) if o._rg and g is not None]
        if not pairs:
            return tuple(None for _ in edges)
        from ..autograd import grad as autograd_grad
        got = autograd_grad([o for o, _ in pairs], mine + params, [g for _, g in pairs], create_graph=create,
                            allow_unused=True)
        return tuple(got)

    if len(results) == 1:
        record("CheckpointFunctionBackward", results[0], edges, lambda g: vjp([g]))
    else:
        record_multi("CheckpointFunctionBackward", results, edges, vjp)
    return _rebuild(structure, results)


def _rebuild(structure, results):
    """fn's output with its tensors replaced, in order, by `results`."""
    if isinstance(structure, Tensor):
        return results[0]
    it = iter(results)
    return type(structure)(next(it) if isinstance(o, Tensor) else o for o in structure)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules) in `segments` checkpointed chunks; the last chunk runs
    normally, as in PyTorch."""
    if use_reentrant is None:
        warnings.warn("tensorplug.utils.checkpoint: the use_reentrant parameter should be passed explicitly; "
                      "it defaults to True as in PyTorch, and use_reentrant=False is recommended", stacklevel=2)
        use_reentrant = True
    funcs = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments <= 0:
        raise ValueError(f"checkpoint_sequential: segments must be positive, got {segments}")
    size = max(len(funcs) // segments, 1)

    def run(start, end):
        def forward(x):
            for f in funcs[start:end + 1]:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(funcs) - 1)(input)
