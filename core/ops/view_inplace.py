"""In-place writes through views, for autograd (PyTorch's view rebase / CopySlices).

A view aliases its root's array. When an in-place op writes into view `t` and gradients are
involved, the write changes the root too, so the root's history must change as well:

- root_new = root_old with t's region replaced by t_new. The root gets a "CopySlices" node: the
  gradient g of root_new flows to root_old with t's region zeroed, and to t_new as g's region.
- t itself becomes a view of root_new ("AsStridedBackward0"): its gradient is scattered into the
  root's shape at its region.
- other views of the same root made before the write are stale; `refresh` (called by the graph's
  edge_of when such a view is used) remakes their history as views of the root's current one.

A region is the flat positions, in the root, of the view's elements (in the view's order): the view's
steps (make_view's (kernel, args) chain) replayed on an int64 arange shaped like the root.
"""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd import graph
from ..autograd.grad_mode import no_grad
from ._core import _gstate, _make, record

_VIEW_INPLACE = ("in-place operations that carry gradients through a view are not supported here: this "
                 "view was made by an op whose steps tensorplug cannot replay; write into the base with index "
                 "assignment (base[index] = value) or use an out-of-place op instead")


def check(t, incoming_grad):
    """Raise (before writing) when an in-place op on view t cannot be tracked by autograd."""
    root = t._base
    if not (root._rg or incoming_grad):
        return
    if root._rg and root.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if root._rg and not t._rg:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode "
                           "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                           "You can clarify your code by moving both the view and the inplace either both "
                           "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                           "outside (if you want the inplace to be tracked).")
    if t._vsteps is None:
        raise RuntimeError(_VIEW_INPLACE)


def positions(t):
    """Flat positions in t's root of t's elements, in t's (C) order: an int64 tensor of t.numel()."""
    root = t._base
    k = root._k
    shape = root._data.shape
    n = 1
    for s in shape:
        n *= s
    arr = k["reshape"](k["arange"](0, n, 1, "int64"), shape)
    for name, args in t._vsteps:
        if name != "alias":
            arr = k[name](arr, *args)
    m = 1
    for s in t._data.shape:
        m *= s
    return _make(k["reshape"](k["copy"](arr), (m,)), _dt.int64, k, root._dev)


def _graph_handle(t):
    """A tensor standing for t's current place in the graph (its values are never read)."""
    h = _make(t._data, t._dtype, t._k, t._dev)
    if t._rg:
        if t.grad_fn is None:       # (a leaf: its gradient goes to its own AccumulateGrad)
            return t
        h.grad_fn, h._out_nr, h._rg = t.grad_fn, t._out_nr, True
    return h


def _as_view_of_root(t, pos):
    """Make t's history: a view of its root's current one, at flat positions pos."""
    root = t._base
    rshape = root._data.shape
    n = root.numel()

    def vjp(g):
        return (g.new_zeros((n,)).index_put((pos,), g.reshape(-1), accumulate=True).reshape(rshape),)
    record("AsStridedBackward0", t, (root,), vjp)
    t._vgen = root._rebases


def rebase(t):
    """After an in-place op gave view t its new history (t_new), rebase t's root onto it."""
    root = t._base
    if not (root._rg or t._rg) or not _gstate.enabled:
        return
    pos = positions(t)
    old, new = _graph_handle(root), _graph_handle(t)
    old_rg, new_rg = old._rg, new._rg
    vshape = t._data.shape
    keep = []

    def vjp(g):
        g_old = None
        if old_rg:
            if not keep:            # ones with t's region zeroed (a constant of the backward)
                with no_grad():
                    m = g.new_ones((g.numel(),))
                    m[pos] = 0
                keep.append(m.reshape(g.shape))
            g_old = g * keep[0]
        g_new = g.reshape(-1)[pos].reshape(vshape) if new_rg else None
        return (g_old, g_new)
    record("CopySlices", root, (old, new), vjp)
    root._rebases += 1
    _as_view_of_root(t, pos)


def refresh(t):
    """View t's history predates an in-place write through another view of its root: remake it."""
    if t._vsteps is None:
        raise RuntimeError(_VIEW_INPLACE)
    _as_view_of_root(t, positions(t))


graph.refresh_view = refresh
