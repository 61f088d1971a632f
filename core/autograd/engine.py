"""The backward engine: runs graph nodes in dependency order without recursion."""
from __future__ import annotations

from . import grad_mode
from .graph import AccumulateGrad, edge_of

_state = grad_mode.state

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")


def _collect(roots):
    """Every node reachable from `roots`: how many edges point at each, and who points at it."""
    deps = {n: 0 for n in roots}
    parents = {}
    stack = list(deps)
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
            parents.setdefault(child, []).append(node)
    return deps, parents


def _check_saved(node):
    saved = node.saved
    if saved:
        for t, v in zip(saved, node.versions):
            if t._version != v:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: [{t._dtype.name} tensor of shape {list(t.shape)}] is at version "
                    f"{t._version}; expected version {v} instead. The saved tensor belongs to "
                    f"{node._name}. Hint: the operation that modified it in place came after it was saved.")


def _add(a, b):
    return b if a is None else (a if b is None else a + b)


def run_backward(outputs, grad_outputs, retain_graph, create_graph, targets=None, allow_unused=False):
    """Backpropagate from `outputs`. With `targets` (a list of tensors) return their gradients
    instead of accumulating into `.grad` of leaves."""
    from ..tensor import Tensor
    roots, root_grads = [], []
    for out, g in zip(outputs, grad_outputs):
        if not out._rg:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs; pass "
                                   f"gradient= with shape {list(out.shape)}")
            g = out._ones_like_nograd()
        elif not isinstance(g, Tensor):
            g = out._new_like_data(g)
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {list(g.shape)} and output "
                               f"has a shape of {list(out.shape)}")
        e = edge_of(out)
        roots.append(e)
        root_grads.append(g)

    deps, parents = _collect([e[0] for e in roots])
    buffers = {}
    for (node, nr), g in zip(roots, root_grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.n_out
        buf[nr] = _add(buf[nr], g)

    capture = None
    if targets is not None:
        capture = {}
        for i, t in enumerate(targets):
            e = edge_of(t)
            if e is None:
                raise RuntimeError(f"One of the differentiated Tensors (index {i}) does not require grad")
            capture.setdefault((e[0], e[1]), []).append(i)
        needed = _needed_nodes(parents, {k[0] for k in capture})
    results = [None] * (len(targets) if targets is not None else 0)

    prev = _state.enabled
    _state.enabled = bool(create_graph)
    try:
        ready = [n for n in {id(n): n for n, _ in roots}.values() if deps[n] == 0]
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if grads is not None:
                grads = _run_tensor_hooks(node, grads)
            if capture is not None and grads is not None:
                for nr, g in enumerate(grads):
                    for i in capture.get((node, nr), ()):
                        results[i] = g
            if isinstance(node, AccumulateGrad):
                if capture is None and grads is not None and grads[0] is not None:
                    _accumulate(node.variable, grads[0], create_graph)
                continue
            if grads is not None and (capture is None or node in needed) and any(g is not None for g in grads):
                in_grads = _call(node, grads, retain_graph)
                if node.hooks:
                    for h in node.hooks:
                        h(in_grads, tuple(grads))
                for e, g in zip(node.edges, in_grads):
                    if e is None or g is None:
                        continue
                    child, nr = e
                    buf = buffers.get(child)
                    if buf is None:
                        buf = buffers[child] = [None] * child.n_out
                    buf[nr] = _add(buf[nr], g)
            elif not retain_graph and node.vjp is not None and grads is not None:
                node.vjp = None
                node.saved = None
            for e in node.edges:
                if e is None:
                    continue
                child = e[0]
                deps[child] -= 1
                if deps[child] == 0:
                    ready.append(child)
    finally:
        _state.enabled = prev

    if targets is not None:
        for i, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (index {i}) appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        return tuple(results)
    return None


def _needed_nodes(parents, target_nodes):
    """Nodes from which some target is reachable (only these run in autograd.grad)."""
    needed = set(target_nodes)
    stack = list(target_nodes)
    while stack:
        for p in parents.get(stack.pop(), ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


def _run_tensor_hooks(node, grads):
    hooks = node.tensor_hooks
    if not hooks:
        return grads
    grads = list(grads)
    for nr, lst in hooks.items():
        if grads[nr] is None:
            continue
        for h in list(lst):
            r = h(grads[nr])
            if r is not None:
                grads[nr] = r
    return grads


def _call(node, grads, retain_graph):
    vjp = node.vjp
    if vjp is None:
        raise RuntimeError(_FREED)
    _check_saved(node)
    if node.n_out == 1:
        out = vjp(grads[0])
    else:
        from ..ops.creation import zeros
        full = [g if g is not None else zeros(shape, dtype=dt, device=dev)
                for g, (shape, dt, dev) in zip(grads, node.out_meta)]
        out = vjp(full)
    if not retain_graph:
        node.vjp = None
        node.saved = None
    if not isinstance(out, (tuple, list)):
        out = (out,)
    if len(out) != len(node.edges):
        raise RuntimeError(f"function {node._name} returned an incorrect number of gradients "
                           f"(expected {len(node.edges)}, got {len(out)})")
    return out


def _accumulate(var, g, create_graph):
    if var._hooks:
        for h in list(var._hooks):
            r = h(g)
            if r is not None:
                g = r
    if tuple(g.shape) != tuple(var.shape):
        raise RuntimeError(f"gradient of shape {list(g.shape)} does not match the shape "
                           f"{list(var.shape)} of the tensor it is accumulated into")
    if not create_graph:
        g = g.detach()
    if var.grad is None:
        # a fresh tensor, so later in-place accumulation never writes into a user's tensor
        var.grad = g if create_graph else g._clone_data()
    elif create_graph or var.grad._rg:
        var.grad = var.grad + g
    else:
        var.grad._iadd_data(g)
