"""The backward engine: runs graph nodes in dependency order without recursion.

`run_backward` walks the graph once to count, for every node, how many edges point at
it; then it runs nodes whose count has dropped to zero (a node runs only after every
node that feeds it a gradient). Each node's incoming gradients are summed in a buffer,
passed through tensor hooks, and given to the node's `vjp`. Unless the graph is
retained, a node's `vjp` and saved tensors are dropped as soon as it has run.
With `create_graph=True` grad mode stays on while vjps run, so the backward pass is
itself recorded and can be differentiated again.
"""
from __future__ import annotations

import sys

from . import grad_mode
from .graph import AccumulateGrad, edge_of

_state = grad_mode.state

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")


class _Anomaly:
    enabled = False


anomaly = _Anomaly()

# one list of final callbacks per backward pass now running (the innermost last); see queue_callback
_final_callbacks: list = []


def queue_callback(callback):
    """Run `callback()` when the backward pass that is running now has processed its whole graph,
    before `backward()` / `autograd.grad()` returns (like PyTorch's
    `Variable._execution_engine.queue_callback`). Callable only during a backward pass (from a
    hook); callbacks run in the order queued and may queue more."""
    if not _final_callbacks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final_callbacks[-1].append(callback)


def _collect(roots, want_parents):
    """Every node reachable from `roots`: how many edges point at each, and (if wanted) who
    points at it."""
    deps = dict.fromkeys(roots, 0)
    stack = list(deps)
    if not want_parents:            # (backward(): the same walk without the parents' bookkeeping)
        get = deps.get
        while stack:
            for e in stack.pop().edges:
                if e is not None:
                    child = e[0]
                    d = get(child)
                    if d is None:
                        deps[child] = 1
                        stack.append(child)
                    else:
                        deps[child] = d + 1
        return deps, None
    parents = {}
    while stack:
        node = stack.pop()
        for e in node.edges:
            if e is None:
                continue
            child = e[0]
            if child in deps:
                deps[child] += 1
            else:
                deps[child] = 1
                stack.append(child)
            if want_parents:
                p = parents.get(child)
                if p is None:
                    parents[child] = [node]
                else:
                    p.append(node)
    return deps, parents


def _check_saved(node):
    for t, v in zip(node.saved, node.versions):
        tv = t._ver                     # (t._version without the property call: once per saved tensor)
        if (0 if tv is None else tv[0]) != v:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t._dtype.name} tensor of shape {list(t.shape)}], saved by "
                f"{node._name}, is at version {t._version}; expected version {v} instead. Hint: "
                f"an in-place operation after the forward pass changed a tensor that {node._name} "
                f"needs; use an out-of-place op (or .clone()) there.")


def _add(a, b):
    return b if a is None else (a if b is None else a + b)


def _root_grad(i, out, g):
    if not out._rg:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    if g is None:
        if out._data.shape != () and out.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs; pass "
                               f"gradient= with shape {list(out.shape)}")
        if out._dtype.category == 3:
            raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                               f"{out._dtype!r}")
        return out._ones_like_nograd()
    from ..tensor import Tensor
    if not isinstance(g, Tensor):
        g = out._new_like_data(g)
    if tuple(g.shape) != tuple(out.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                           f"output[{i}] has a shape of {list(out.shape)}.")
    if g._dtype is not out._dtype:
        if g._dtype.category == 3 or out._dtype.category == 3:
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                               f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g._dtype!r} and "
                               f"output[{i}] has a dtype of {out._dtype!r}.")
        if g._dtype.is_floating_point != out._dtype.is_floating_point:
            raise RuntimeError(f"For grad_output[{i}]: expected a {out._dtype.name} gradient, got "
                               f"{g._dtype.name}")
        g = g.to(out._dtype)
    return g


def run_backward(outputs, grad_outputs, retain_graph, create_graph, targets=None, allow_unused=False):
    """Backpropagate from `outputs`.

    Without `targets`, gradients are accumulated into `.grad` of the leaves reached.
    With `targets` (a list of tensors) nothing is accumulated: only the nodes that lead to a
    target run, and the gradients arriving at the targets are returned (a tuple, None where a
    target was not reached; an error for that unless allow_unused)."""
    if len(outputs) == 1:           # loss.backward(): one root, which is ready first (a DAG)
        g = _root_grad(0, outputs[0], grad_outputs[0])
        root, nr = edge_of(outputs[0])
        deps, parents = _collect((root,), targets is not None)
        buf = [None] * root.n_out
        buf[nr] = g
        buffers = {root: buf}
        ready = [root]
    else:
        roots, root_grads = [], []
        for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
            root_grads.append(_root_grad(i, out, g))
            roots.append(edge_of(out))
        deps, parents = _collect([e[0] for e in roots], targets is not None)
        buffers = {}
        for (node, nr), g in zip(roots, root_grads):
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node.n_out
            buf[nr] = _add(buf[nr], g)
        ready = [n for n in {id(n): n for n, _ in roots}.values() if deps[n] == 0]

    capture = needed = None
    if targets is not None:
        capture = {}
        for i, t in enumerate(targets):
            e = edge_of(t)
            if e is None:
                raise RuntimeError(f"One of the differentiated Tensors (index {i}) does not require grad")
            capture.setdefault(e, []).append(i)
        needed = _ancestors(parents, {k[0] for k in capture})
    results = [None] * (len(targets) if targets is not None else 0)

    prev = _state.enabled
    _state.enabled = bool(create_graph)
    callbacks = []
    _final_callbacks.append(callbacks)
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            in_grads = None
            if grads is not None:
                if node.tensor_hooks or node.retain_hooks:
                    grads = _run_tensor_hooks(node, grads)
                if node.__class__ is AccumulateGrad:
                    var = node.variable
                    g = grads[0]
                    if g is not None and var._hooks:
                        g = _run_hooks(var._hooks, g)
                    if capture is None:
                        if g is not None:
                            _accumulate(var, g, create_graph)
                    else:
                        for i in capture.get((node, 0), ()):
                            results[i] = g
                    continue
                if capture is not None:
                    for nr, g in enumerate(grads):
                        for i in capture.get((node, nr), ()):
                            results[i] = g
                if needed is None or node in needed:
                    in_grads = _run_node(node, grads, retain_graph)
            # one pass over the edges: hand gradients down, release children that are complete
            if in_grads is not None:
                for e, g in zip(node.edges, in_grads):      # (_run_node checked the lengths match)
                    if e is None:
                        continue
                    child = e[0]
                    if g is not None:
                        buf = buffers.get(child)
                        if buf is None:
                            buf = buffers[child] = [None] * child.n_out
                        nr = e[1]
                        b = buf[nr]
                        buf[nr] = g if b is None else b + g
                    d = deps[child] - 1
                    deps[child] = d
                    if d == 0:
                        ready.append(child)
            else:
                for e in node.edges:
                    if e is not None:
                        child = e[0]
                        d = deps[child] - 1
                        deps[child] = d
                        if d == 0:
                            ready.append(child)
        while callbacks:
            callbacks.pop(0)()
    finally:
        _final_callbacks.pop()
        _state.enabled = prev

    if targets is not None:
        if not allow_unused:
            for i, r in enumerate(results):
                if r is None:
                    raise RuntimeError(f"One of the differentiated Tensors (index {i}) appears to not have "
                                       "been used in the graph. Set allow_unused=True if this is the "
                                       "desired behavior.")
        return tuple(results)
    return None


def _run_node(node, grads, retain_graph):
    """Run one node's vjp on its output gradients; the input gradients (one per edge), or None
    when no gradient arrived."""
    if node.pre_hooks:
        for h in list(node.pre_hooks):
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    vjp = node.vjp
    if node.n_out == 1:
        g0 = grads[0]
        if g0 is None:
            return None
        if vjp is None:
            raise RuntimeError(_FREED)
        if node.saved:
            _check_saved(node)
        out = vjp(g0)
    else:
        if all(g is None for g in grads):
            return None
        if vjp is None:
            raise RuntimeError(_FREED)
        if node.saved:
            _check_saved(node)
        if node.materialize:
            from ..ops.creation import zeros
            grads = [g if g is not None else zeros(shape, dtype=dt, device=dev)
                     for g, (shape, dt, dev) in zip(grads, node.out_meta)]
        out = vjp(list(grads))
    if not retain_graph:
        node.vjp = None
        node.saved = None
    if out.__class__ is not tuple:
        out = tuple(out) if isinstance(out, list) else (out,)
    if len(out) != len(node.edges):
        raise RuntimeError(f"function {node._name} returned an incorrect number of gradients "
                           f"(expected {len(node.edges)}, got {len(out)})")
    if anomaly.enabled:
        _check_nan(node, out)
    if node.hooks:
        for h in list(node.hooks):
            r = h(out, tuple(grads))
            if r is not None:
                out = tuple(r)
    return out


def _ancestors(parents, target_nodes):
    """Nodes from which some target node is reachable through at least one edge: the only
    nodes that must run in autograd.grad (a target's own node runs only if it leads to
    another target)."""
    needed = set()
    stack = list(target_nodes)
    while stack:
        for p in parents.get(stack.pop(), ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


def _run_hooks(hooks, g):
    for h in list(hooks):
        r = h(g)
        if r is not None:
            g = r
    return g


def _run_tensor_hooks(node, grads):
    grads = list(grads)
    for table in (node.tensor_hooks, node.retain_hooks):      # retain_grad's hooks see the final grad
        if table:
            for nr, lst in table.items():
                if grads[nr] is not None and lst:
                    grads[nr] = _run_hooks(lst, grads[nr])
    return grads


def _check_nan(node, out):
    for i, g in enumerate(out):
        if g is not None and g._dtype.is_floating_point and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node._name}' returned nan values in its {i}th output.")


_getrefcount = sys.getrefcount
# references to an exclusively held gradient: the engine's `g` and `grads` list, _accumulate's
# and _exclusive's parameters, getrefcount's argument; its array by the tensor, `data` and the argument
# (tests/autograd/test_grad_buffer_reuse.py pins both counts down)
_EXCLUSIVE_TENSOR_REFS = 5
_EXCLUSIVE_ARRAY_REFS = 3
_EXCLUSIVE_BASE_REFS = 3


def _exclusive(g):
    """True when gradient g is referenced only by the engine and owns its (writable) buffer."""
    if g._base is not None or g.__dict__:
        return False
    data = g._data
    flags = getattr(data, "flags", None)      # (a NumPy flags object holds a reference to data)
    if flags is not None and not (flags.writeable and (flags.owndata or _whole_reshape(data, flags))):
        return False
    del flags
    return _getrefcount(g) <= _EXCLUSIVE_TENSOR_REFS and _getrefcount(data) <= _EXCLUSIVE_ARRAY_REFS


def _whole_reshape(data, flags):
    """data is a contiguous reshape of all of a buffer that no other array or tensor references (a kernel's
    result reshaped, as conv_weight's (O, C*K) product into (O, C, *K)): taking it is as safe as taking a
    buffer data owns. ResNet-18 copied its conv weight gradients for this, 0.5 ms per 512x512x3x3."""
    base = getattr(data, "base", None)
    if base is None or not flags.c_contiguous or getattr(base, "base", 0) is not None:
        return False
    bflags = getattr(base, "flags", None)
    ok = bflags is not None and bflags.owndata and bflags.writeable and base.nbytes == data.nbytes
    del bflags
    # references to base: data's, the local name, getrefcount's argument
    return ok and _getrefcount(base) <= _EXCLUSIVE_BASE_REFS


def _accumulate(var, g, create_graph):
    """Add gradient g into leaf (or `inputs=`) tensor var's `.grad`; hooks have already run."""
    gs, vs = g._data.shape, var._data.shape
    if gs != vs and tuple(gs) != tuple(vs):
        raise RuntimeError(f"gradient of shape {list(g.shape)} does not match the shape "
                           f"{list(var.shape)} of the tensor it is accumulated into")
    gd = var._grad_dtype                # set to a dtype (not None, not the default marker): .grad has it
    if gd is not g._dtype and gd is not None and gd.__class__ is g._dtype.__class__:
        g = g.to(gd)
    # (var._grad: .grad's storage; the property would warn for an `inputs=` non-leaf)
    cur = var._grad
    if cur is None:
        if create_graph:
            var._grad = g
        elif _exclusive(g):
            # nobody else can see this buffer: take it instead of copying (g itself when it has no history)
            var._grad = g if not g._rg else g.detach()
        else:
            # a fresh tensor, so later in-place accumulation never writes into a user's tensor
            var._grad = g.detach()._clone_data()
    elif create_graph or cur._rg:
        var._grad = cur + g
    elif g._rg:
        cur._iadd_data(g.detach())
    else:
        cur._iadd_data(g)
    del cur
    hooks = var._post_acc_hooks
    if hooks:
        for h in list(hooks):
            h(var)
