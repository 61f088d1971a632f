"""Point-to-point operations and collectives on tensors.

Every process of the group must call a collective, in the same order, with tensors of the same
shape and dtype. Results are written into the given tensors in place (their data; no autograd: see
`tensorplug.distributed.nn.functional` for differentiable versions). `src` / `dst` are global ranks.
With `async_op=True` (and for isend / irecv) a `Work` is returned: the tensors hold the result
after `work.wait()`. A process that is not a member of `group` does nothing and gets None.
"""
from __future__ import annotations

from ..tensor import Tensor, _make
from . import debug as _debug
from .process_group import _world, resolve
from .node import check_device_ids
from .reduce_op import ReduceOp, as_reduce_op, premul
from .work import Work

__all__ = ["send", "recv", "isend", "irecv", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
           "barrier"]

_SUM = ReduceOp.SUM
_dbg = _debug.state      # `_dbg.on`: DETAIL checks (or the level is not read yet); see debug.py


def _check(t, what="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what} must be a tensorplug.Tensor, got {type(t).__name__}")


def _check_list(lst, like, n, what):
    if not isinstance(lst, (list, tuple)):
        raise TypeError(f"{what} must be a list of tensors, got {type(lst).__name__}")
    if len(lst) != n:
        raise ValueError(f"{what} must have one tensor per process of the group ({n}), got {len(lst)}")
    for i, t in enumerate(lst):
        _check(t, f"{what}[{i}]")
        if t._dtype is not like._dtype or tuple(t._data.shape) != tuple(like._data.shape):
            raise RuntimeError(f"{what}[{i}] is a {t._dtype.name} tensor of shape {list(t.shape)}; "
                               f"expected {like._dtype.name} of shape {list(like.shape)} (like the input)")
        if t._k is not like._k:
            raise RuntimeError(f"{what}[{i}] is on {t.device}, the input on {like.device}")


def _peer(pg, rank, what):
    r = pg.group_rank(rank, what)
    if r == pg.handle.rank:
        raise ValueError(f"invalid {what} {rank}: it is the rank of this process")
    return r


def _op_name(op, t):
    op = as_reduce_op(op)
    dt = t._dtype
    if op is ReduceOp.AVG:
        if not dt.is_floating_point:
            raise RuntimeError(f"ReduceOp.AVG needs a floating-point tensor, got {dt.name}")
        return "sum", True
    if op.value in ("band", "bor", "bxor") and dt.is_floating_point:
        raise RuntimeError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dt.name}")
    return op.value, False


def _group(group):
    """The process group to run on: raises if not initialized; None where this process is not a
    member of `group` (the collective is then a no-op for it)."""
    return _world() if group is None else resolve(group)


def _divider(t, n):
    k = t._k
    n = float(n)
    return lambda: k["div"](t._data, n, out=t._data)


# -- point to point --------------------------------------------------------------------------------
def send(tensor, dst, group=None, tag=0) -> None:
    """Send `tensor` to global rank `dst`; returns when the buffer may be reused."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    pg.backend.send(tensor._data, _peer(pg, dst, "destination rank"), tag, pg.handle)


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receive into `tensor` (preallocated, of the sent shape and dtype) from global rank `src`
    (None: from any process). Returns the sender's global rank."""
    pg = _group(group)
    if pg is None:
        return -1
    _check(tensor)
    s = None if src is None else _peer(pg, src, "source rank")
    got = pg.backend.recv(tensor._data, s, tag, pg.handle)
    tensor._bump_version()
    return pg.global_rank(got)


def isend(tensor, dst, group=None, tag=0):
    """Start sending `tensor`; returns a Work (don't modify the tensor before `wait()`)."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    return Work(pg.backend.isend(tensor._data, _peer(pg, dst, "destination rank"), tag, pg.handle), None, pg)


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into `tensor`; returns a Work (the data is there after `wait()`)."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    s = None if src is None else _peer(pg, src, "source rank")
    tensor._bump_version()
    return Work(pg.backend.irecv(tensor._data, s, tag, pg.handle), None, pg)


# -- collectives -------------------------------------------------------------------------------------
def all_reduce(tensor, op=_SUM, group=None, async_op=False):
    """Reduce `tensor` over the group with `op`; every process gets the result in `tensor`."""
    pg = _group(group)
    if pg is None:
        return None
    if tensor.__class__ is not Tensor:
        _check(tensor)
    if op is _SUM and tensor._dtype.name != "bool":
        name, avg = "sum", False
    else:
        op, _ = premul(op, tensor, out=tensor._data)     # PREMUL_SUM: scale in place, then sum
        name, avg = _op_name(op, tensor)
    if _dbg.on:
        _debug.check(pg, "all_reduce", tensor)
    tensor._bump_version()
    req = pg.backend.all_reduce(tensor._data, name, pg.handle, async_op)
    post = _divider(tensor, pg.handle.size) if avg else None
    if async_op:
        return Work(req, post, pg, [tensor])
    if post is not None:
        post()
    return None


def broadcast(tensor, src, group=None, async_op=False):
    """Copy `tensor` of global rank `src` into `tensor` of every process of the group."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    root = pg.group_rank(src, "source rank")
    if _dbg.on:
        _debug.check(pg, "broadcast", tensor, src)
    tensor._bump_version()
    req = pg.backend.broadcast(tensor._data, root, pg.handle, async_op)
    return Work(req, None, pg, [tensor]) if async_op else None


def reduce(tensor, dst, op=_SUM, group=None, async_op=False):
    """Reduce `tensor` over the group into `tensor` of global rank `dst` (the other processes'
    tensors are left as they were)."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    root = pg.group_rank(dst, "destination rank")
    op, scaled = premul(op, tensor, out=tensor._data if root == pg.handle.rank else None)
    name, avg = _op_name(op, tensor)
    if _dbg.on:
        _debug.check(pg, "reduce", tensor, dst)
    tensor._bump_version()
    req = pg.backend.reduce(tensor._data if scaled is None else scaled, root, name, pg.handle, async_op)
    post = _divider(tensor, pg.handle.size) if avg and root == pg.handle.rank else None
    if async_op:
        return Work(req, post, pg, [tensor])
    if post is not None:
        post()
    return None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every process gets every process's `tensor`: tensor_list[i] receives group rank i's."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    _check_list(tensor_list, tensor, pg.handle.size, "tensor_list")
    if _dbg.on:
        _debug.check(pg, "all_gather", tensor)
    for t in tensor_list:
        t._bump_version()
    req = pg.backend.all_gather([t._data for t in tensor_list], tensor._data, pg.handle, async_op)
    return Work(req, None, pg, list(tensor_list)) if async_op else None


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Like all_gather, into one tensor: `output_tensor` has size * input's numel elements, either
    stacked (shape (size, *input.shape)) or concatenated along dim 0."""
    pg = _group(group)
    if pg is None:
        return None
    _check(output_tensor, "output_tensor")
    _check(input_tensor, "input_tensor")
    if output_tensor._dtype is not input_tensor._dtype:
        raise RuntimeError(f"output_tensor is {output_tensor._dtype.name}, input_tensor "
                           f"{input_tensor._dtype.name}: they must have the same dtype")
    if output_tensor.numel() != input_tensor.numel() * pg.handle.size:
        raise RuntimeError(f"output_tensor must have world size ({pg.handle.size}) times the elements of "
                           f"input_tensor ({input_tensor.numel()}), got {output_tensor.numel()}")
    if _dbg.on:
        _debug.check(pg, "all_gather_into_tensor", input_tensor)
    output_tensor._bump_version()
    req = pg.backend.all_gather_into(output_tensor._data, input_tensor._data, pg.handle, async_op)
    return Work(req, None, pg, [output_tensor]) if async_op else None


def _root_list(pg, tensors, tensor, root, op, role):
    """`{op}_list` on the root rank (required there, checked against tensor), None elsewhere (where
    it must not be given)."""
    name = f"{op}_list"
    if root == pg.handle.rank:
        if tensors is None:
            raise ValueError(f"{op}: {name} is required on the {role} rank")
        _check_list(tensors, tensor, pg.handle.size, name)
        return list(tensors)
    if tensors:
        raise ValueError(f"{op}: {name} must not be given on non-{role} ranks")
    return None


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Global rank `dst` gets every process's `tensor` in gather_list (one per group rank); the
    other processes pass gather_list=None."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    root = pg.group_rank(dst, "destination rank")
    outs = _root_list(pg, gather_list, tensor, root, "gather", "destination")
    if _dbg.on:
        _debug.check(pg, "gather", tensor, dst)
    if outs is not None:
        for t in outs:
            t._bump_version()
        outs = [t._data for t in outs]
    req = pg.backend.gather(tensor._data, outs, root, pg.handle, async_op)
    return Work(req, None, pg) if async_op else None


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Global rank `src` sends scatter_list[i] to group rank i, which receives it in `tensor`; the
    other processes pass scatter_list=None."""
    pg = _group(group)
    if pg is None:
        return None
    _check(tensor)
    root = pg.group_rank(src, "source rank")
    ins = _root_list(pg, scatter_list, tensor, root, "scatter", "source")
    if _dbg.on:
        _debug.check(pg, "scatter", tensor, src)
    if ins is not None:
        ins = [t._data for t in ins]
    tensor._bump_version()
    req = pg.backend.scatter(tensor._data, ins, root, pg.handle, async_op)
    return Work(req, None, pg, [tensor]) if async_op else None


def reduce_scatter(output, input_list, op=_SUM, group=None, async_op=False):
    """Reduce input_list elementwise over the group; group rank i receives the reduction of every
    process's input_list[i] in `output`."""
    pg = _group(group)
    if pg is None:
        return None
    _check(output, "output")
    _check_list(input_list, output, pg.handle.size, "input_list")
    op, scaled = premul(op, list(input_list))       # PREMUL_SUM: scaled copies of the inputs, then sum
    name, avg = _op_name(op, output)
    if _dbg.on:
        _debug.check(pg, "reduce_scatter", output)
    output._bump_version()
    req = pg.backend.reduce_scatter(output._data, scaled or [t._data for t in input_list], name, pg.handle, async_op)
    post = _divider(output, pg.handle.size) if avg else None
    if async_op:
        return Work(req, post, pg, [output])
    if post is not None:
        post()
    return None


def reduce_scatter_tensor(output, input, op=_SUM, group=None, async_op=False):
    """reduce_scatter with one input tensor of size * output's numel elements (group rank i gets
    the i-th slice along the flattened input)."""
    pg = _group(group)
    if pg is None:
        return None
    _check(output, "output")
    _check(input, "input")
    n = pg.handle.size
    if input.numel() != output.numel() * n:
        raise RuntimeError(f"input must have world size ({n}) times the elements of output "
                           f"({output.numel()}), got {input.numel()}")
    k = input._k
    flat = k["reshape"](input._data, (n,) + tuple(output._data.shape))
    pieces = [_make(k["slice"](flat, (i,)), input._dtype, k, input._dev) for i in range(n)]
    return reduce_scatter(output, pieces, op, pg, async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process of the group has entered the barrier (`device_ids`: a list of
    device indices, accepted as in PyTorch; they change nothing here)."""
    check_device_ids(device_ids)
    pg = _group(group)
    if pg is None:
        return None
    if _dbg.on:
        _debug.check(pg, "barrier")
    req = pg.backend.barrier(pg.handle, async_op)
    return Work(req, None, pg) if async_op else None
