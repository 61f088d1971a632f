"""Linear algebra: matmul (NumPy semantics, `@`), mm bmm mv dot vdot outer inner addmm addmv addr
addbmm baddbmm einsum tensordot kron cross trace inverse solve gesv det logdet slogdet matrix_power,
and the `linalg.*` functions (vector/matrix norms, multi_dot, vecdot, lu_factor, ...) that the
`tensorplug.linalg` namespace re-exports. (The top-level `norm` lives with the reductions.)

Values come from the `matmul`, `inv` and `solve` kernels (plus `sum`, `diagonal`, views);
determinants and SVD-based matrix norms are computed on the host (their results are Python-sized
anyway: one number per matrix). Every backward rule is written with Tensor ops, so gradients can be
differentiated again (`create_graph=True`).
"""
from __future__ import annotations

import collections
import math
import numbers
import warnings

import numpy as np

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ._core import (Tensor, _gstate, _make, broadcast_shapes, check_inplace, check_same_device,
                    commit_inplace, grad_for, normalize_dims, record, record_multi, snapshot, sum_to,
                    wrap_dim, zeros_like_grad)
from .complex import cj
from .pointwise import _out, where
from .shape import expand, make_view, permute, reshape


class LinAlgError(RuntimeError):
    """Raised when a linear-algebra routine fails on its input (e.g. a singular matrix)."""


# -- small helpers -----------------------------------------------------------------------------------
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
_T_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble", "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _tn(dt):
    return _T_NAMES[dt.name]


def _check_tensor(x, fname, argname):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' must be Tensor, not {type(x).__name__}")


def _xs(shape):
    return "x".join(str(s) for s in shape) if shape else "scalar"


def _mT(x):
    """x with its last two dimensions swapped (a view)."""
    n = x.ndim
    return permute(x, *range(n - 2), n - 1, n - 2)


def _host_like(arr, like, dtype=None):
    """A tensor holding the host array `arr`, on `like`'s backend and device."""
    dt = dtype or like._dtype
    arr = np.array(arr, dtype=dt.name, order="C")           # (ascontiguousarray would make 0-d 1-d)
    k = like._k
    with k["__backend__"].device_context(like._dev.index):
        data = k["from_numpy"](arr)
    return _make(data, dt, k, like._dev)


def _rg(*ts):
    if not _gstate.enabled:
        return False
    return any(isinstance(t, Tensor) and t._rg for t in ts)


def _check_float(x, fname):
    dt = x._dtype
    if dt.category != 2:
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. Got {_tn(dt)}")
    if dt is _dt.float16 or dt is _dt.bfloat16:
        raise RuntimeError(f"{fname}: Low precision dtypes not supported. Got {_tn(dt)}")


def _check_square(x, fname, argname="A"):
    if x.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor {argname} must have at least 2 dimensions.")
    s = x._data.shape
    if s[-1] != s[-2]:
        raise RuntimeError(f"{fname}: {argname} must be batches of square matrices, but they are "
                           f"{s[-2]} by {s[-1]} matrices")


def _any_nonfinite(k, data) -> bool:
    return bool(np.asarray(k["to_numpy"](k["any"](k["logical_not"](k["isfinite"](data)), None, False))))


def _linalg_kernel(fname, kname, k, *datas):
    """Run an inv/solve kernel; turn the backend's failures into clear errors. Backends that do not
    raise on a singular input (they return inf/nan) are caught by a finiteness check."""
    try:
        r = k[kname](*datas)
    except Exception as e:       # numpy.linalg.LinAlgError, cupy errors, ...
        if "singular" in str(e).lower():
            raise LinAlgError(_singular_msg(fname)) from None
        raise RuntimeError(f"{fname}: the backend's {kname!r} kernel failed: {type(e).__name__}: {e}") from e
    if _any_nonfinite(k, r) and not any(_any_nonfinite(k, d) for d in datas):
        raise LinAlgError(_singular_msg(fname))
    return r


def _singular_msg(fname):
    if fname == "linalg.inv":
        return ("linalg.inv: The input matrix is singular (not invertible), so the inversion could not "
                "be completed.")
    return f"{fname}: The solver failed because the input matrix is singular."


def _alpha_beta_check(dt, alpha, beta):
    if dt.category != 2:
        for name, v in (("alpha", alpha), ("beta", beta)):
            if isinstance(v, float) and not float(v).is_integer():
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating "
                                   f"point number.")
            if isinstance(v, Tensor) and v._dtype.category == 2:
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating "
                                   f"point number.")


def _keep_dims(g, shape, axes):
    """Reshape a reduction result (keepdim=False) so it broadcasts against `shape`."""
    if axes is None:
        return reshape(g, (1,) * len(shape))
    kept = list(shape)
    for a in axes:
        kept[a] = 1
    return reshape(g, tuple(kept))


def _zero_grad_node(name, r, inputs):
    """Record an op whose output does not depend (differentiably) on its inputs."""
    if _rg(*inputs):
        ins = tuple(t for t in inputs if isinstance(t, Tensor))
        record(name, r, ins, lambda g: tuple(zeros_like_grad(t) if t._rg else None for t in ins))
    return r


def _nondiff_node(name, outs, inputs):
    """Record an op whose backward tensorplug does not implement: backward through it raises."""
    ins = tuple(t for t in inputs if isinstance(t, Tensor))
    if _rg(*ins) and all(o._dtype.category == 2 for o in outs):
        def vjp(g):
            raise RuntimeError(f"the derivative of {name} is not implemented in tensorplug")
        if len(outs) == 1:
            record(name + "Backward0", outs[0], ins, vjp)
        else:
            record_multi(name + "Backward0", list(outs), ins, vjp)
    return outs


# -- matmul family -----------------------------------------------------------------------------------
def _matmul_check(a, b):
    """Validate operands of matmul; returns None (raises with PyTorch-like messages)."""
    if a._k is not b._k:
        check_same_device(a, b)
    sa, sb = a._data.shape, b._data.shape
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    if a._dtype is not b._dtype:
        if na == 1 and nb == 1:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_tn(a._dtype)} "
                               f"and {_tn(b._dtype)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_C_NAMES[a._dtype.name]} "
                           f"!= {_C_NAMES[b._dtype.name]}")
    if a._dtype is _dt.bool_:
        raise NotImplementedError("\"matmul\" not implemented for 'Bool'")
    if na == 1 and nb == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have "
                               f"the same number of elements, but got {sa[0]} and {sb[0]} elements respectively")
        return
    if nb == 1:
        if sa[-1] != sb[0]:
            if na == 2:
                raise RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({_xs(sa)}), vec ({sb[0]})")
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_xs(sa)} and {_xs(sb)})")
        return
    if na == 1:
        if sa[0] != sb[-2]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied (1x{sa[0]} and {_xs(sb)})")
        return
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_xs(sa)} and {_xs(sb)})")
    if na > 2 or nb > 2:
        try:
            broadcast_shapes(sa[:-2], sb[:-2])
        except RuntimeError as e:
            raise RuntimeError(f"matmul: the batch dimensions of shapes {list(sa)} and {list(sb)} do not "
                               f"broadcast: {e}") from None


def _matmul_raw(a, b):
    return _make(a._k["matmul"](a._data, b._data), a._dtype, a._k, a._dev)


def _matmul_vjp(g, a, b):
    sa, sb = a._data.shape, b._data.shape
    A = a if len(sa) > 1 else reshape(a, (1, sa[0]))
    B = b if len(sb) > 1 else reshape(b, (sb[0], 1))
    batch = broadcast_shapes(A._data.shape[:-2], B._data.shape[:-2])
    G = reshape(g, batch + (A._data.shape[-2], B._data.shape[-1]))
    ga = gb = None
    if a._rg:
        gA = matmul(G, cj(_mT(B)))          # (conj: the adjoint, for complex operands)
        ga = reshape(sum_to(gA, A._data.shape), sa)
    if b._rg:
        gB = matmul(cj(_mT(A)), G)
        gb = reshape(sum_to(gB, B._data.shape), sb)
    return ga, gb


def _record_matmul(name, r, a, b):
    record(name, r, (a, b), lambda g: _matmul_vjp(g, a, b), saved=(a, b))
    return r


def matmul(input, other, *, out=None):
    """Matrix product with `numpy.matmul` semantics: 1-D·1-D is a dot product (0-d result), a 1-D
    operand is promoted to a row (left) or column (right) matrix and the added dimension removed
    afterwards, and leading (batch) dimensions broadcast. Operands must share a dtype."""
    if _amp.on:
        return _amp.run("matmul", matmul, (input, other), {"out": out})
    _check_tensor(input, "matmul", "input")
    _check_tensor(other, "matmul", "other")
    if input.is_sparse or other.is_sparse:
        from ..sparse._matmul import matmul as sparse_matmul
        return sparse_matmul(input, other)
    _matmul_check(input, other)
    r = _matmul_raw(input, other)
    if _gstate.enabled and (input._rg or other._rg):
        _record_matmul("MmBackward0" if input.ndim == 2 and other.ndim == 2 else "MatmulBackward0",
                       r, input, other)
    return _out(r, out)


def mm(input, mat2, *, out=None):
    """Product of two matrices (no broadcasting): (n, m) @ (m, p) -> (n, p)."""
    if _amp.on:
        return _amp.run("mm", mm, (input, mat2), {"out": out})
    _check_tensor(input, "mm", "input")
    _check_tensor(mat2, "mm", "mat2")
    if input.is_sparse or mat2.is_sparse:
        from ..sparse._matmul import matmul as sparse_matmul
        return sparse_matmul(input, mat2)
    if input.ndim != 2:
        raise RuntimeError(f"self must be a matrix (got a {input.ndim}-D tensor of shape {list(input.shape)})")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix (got a {mat2.ndim}-D tensor of shape {list(mat2.shape)})")
    return matmul(input, mat2, out=out)


def _named(r, node_name):
    """matmul's result, its backward node named for the op that was asked for (bmm, mv, dot)."""
    if r.grad_fn is not None:
        r.grad_fn._name = node_name
    return r


def bmm(input, mat2, *, out=None):
    """Batched matrix product of 3-D tensors with equal batch sizes: (b, n, m) @ (b, m, p) -> (b, n, p)."""
    if _amp.on:
        return _amp.run("bmm", bmm, (input, mat2), {"out": out})
    _check_tensor(input, "bmm", "input")
    _check_tensor(mat2, "bmm", "mat2")
    if input.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got shape {list(input.shape)})")
    if mat2.ndim != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor (got shape {list(mat2.shape)})")
    sa, sb = input._data.shape, mat2._data.shape
    if input._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {_tn(input._dtype)} but found {_tn(mat2._dtype)}")
    if sa[0] != sb[0] or sa[2] != sb[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] "
                           f"but got: [{sb[0]}, {sb[1]}] (batch1 has shape {list(sa)}, batch2 has shape "
                           f"{list(sb)}).")
    return _named(matmul(input, mat2, out=out), "BmmBackward0")


def mv(input, vec, *, out=None):
    """Matrix-vector product: (n, m) @ (m,) -> (n,)."""
    if _amp.on:
        return _amp.run("mv", mv, (input, vec), {"out": out})
    _check_tensor(input, "mv", "input")
    _check_tensor(vec, "mv", "vec")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    if input._dtype is not vec._dtype:
        raise RuntimeError(f"mv: expected the matrix and the vector to have the same dtype, but got "
                           f"{_tn(input._dtype)} and {_tn(vec._dtype)}")
    return _named(matmul(input, vec, out=out), "MvBackward0")


def dot(input, other, *, out=None):
    """Inner product of two 1-D tensors of the same length and dtype (a 0-d tensor)."""
    if _amp.on:
        return _amp.run("dot", dot, (input, other), {"out": out})
    _check_tensor(input, "dot", "input")
    _check_tensor(other, "dot", "tensor")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_tn(input._dtype)} "
                           f"and {_tn(other._dtype)}")
    if input._dtype is _dt.bool_:
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")
    return _named(matmul(input, other, out=out), "DotBackward0")


def vdot(input, other, *, out=None):
    """conj(input) · other for 1-D tensors (`dot` for real ones)."""
    if isinstance(input, Tensor) and input._dtype.category == 3:
        from .complex import conj
        input = conj(input)
    return dot(input, other, out=out)


def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors: (n,) x (m,) -> (n, m) (dtypes promote)."""
    _check_tensor(input, "outer", "input")
    _check_tensor(vec2, "outer", "vec2")
    if input.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return _out(reshape(input, (input.shape[0], 1)) * vec2, out)


ger = outer


def inner(input, other, *, out=None):
    """Sum of products over the last dimension: result shape input.shape[:-1] + other.shape[:-1]
    (a 0-d operand multiplies)."""
    if _amp.on:           # PyTorch's inner is dot for two vectors, tensordot otherwise
        vectors = getattr(input, "ndim", 0) == 1 and getattr(other, "ndim", 0) == 1
        return _amp.run("dot" if vectors else "tensordot", inner, (input, other), {"out": out})
    _check_tensor(input, "inner", "input")
    _check_tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return _out(input * other, out)
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"both inputs should have same dtype (got {_tn(input._dtype)} and "
                           f"{_tn(other._dtype)})")
    return _out(tensordot(input, other, dims=([-1], [-1])), out)


def _ignored_input(input, shape):
    """Zeros of `shape` that pass a zero gradient to input (beta == 0 in the add*mm ops)."""
    z = _make(input._k["full"](shape, 0, input._dtype.name), input._dtype, input._k, input._dev)
    return _zero_grad_node("ZerosLikeBackward0", z, (input,))


def _addmm_like(fname, input, prod, beta, alpha):
    """beta * input + alpha * prod, with input broadcast to prod's shape (not the other way)."""
    _check_tensor(input, fname, "input")
    if input._dtype is not prod._dtype:
        raise RuntimeError(f"{fname}: self and mat2 must have the same dtype, but got {_tn(input._dtype)} "
                           f"and {_tn(prod._dtype)}")
    check_same_device(input, prod)
    _alpha_beta_check(input._dtype, alpha, beta)
    if input._dtype.category != 2:          # 2.0 on integer tensors means 2 (keeps the integer dtype)
        alpha = int(alpha) if isinstance(alpha, float) else alpha
        beta = int(beta) if isinstance(beta, float) else beta
    shape = prod._data.shape
    if input._data.shape != shape:
        if input.ndim > len(shape):
            raise RuntimeError(f"{fname}: input of shape {list(input.shape)} can't be broadcast to the "
                               f"result shape {list(shape)}")
        inp = expand(input, *shape)
    else:
        inp = input
    if alpha != 1:
        prod = prod * alpha
    if isinstance(beta, (int, float)) and beta == 0:
        return prod + _ignored_input(input, shape) if _rg(input) else prod
    return (inp if beta == 1 else inp * beta) + prod


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to the (n, p) result. With beta == 0
    input is ignored (its NaNs do not propagate)."""
    if _amp.on:
        return _amp.run("addmm", addmm, (input, mat1, mat2), {"beta": beta, "alpha": alpha, "out": out})
    return _out(_addmm_like("addmm", input, mm(mat1, mat2), beta, alpha), out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec)."""
    if _amp.on:
        return _amp.run("addmv", addmv, (input, mat, vec), {"beta": beta, "alpha": alpha, "out": out})
    return _out(_addmm_like("addmv", input, mv(mat, vec), beta, alpha), out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    if _amp.on:
        return _amp.run("addr", addr, (input, vec1, vec2), {"beta": beta, "alpha": alpha, "out": out})
    return _out(_addmm_like("addr", input, outer(vec1, vec2), beta, alpha), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * bmm(batch1, batch2)."""
    if _amp.on:
        return _amp.run("baddbmm", baddbmm, (input, batch1, batch2), {"beta": beta, "alpha": alpha, "out": out})
    return _out(_addmm_like("baddbmm", input, bmm(batch1, batch2), beta, alpha), out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum_b batch1[b] @ batch2[b] (an (n, p) result)."""
    if _amp.on:
        return _amp.run("addbmm", addbmm, (input, batch1, batch2), {"beta": beta, "alpha": alpha, "out": out})
    _check_tensor(batch1, "addbmm", "batch1")
    _check_tensor(batch2, "addbmm", "batch2")
    if batch1.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got shape {list(batch1.shape)})")
    if batch2.ndim != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor (got shape {list(batch2.shape)})")
    sa, sb = batch1._data.shape, batch2._data.shape
    if sa[0] != sb[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {sa[0]} and {sb[0]}")
    if sa[2] != sb[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({sa[1]}x{sa[2]} and {sb[1]}x{sb[2]})")
    # sum_b A_b @ B_b == [A_0 A_1 ...] @ [B_0; B_1; ...]
    a2 = reshape(permute(batch1, 1, 0, 2), (sa[1], sa[0] * sa[2]))
    b2 = reshape(batch2, (sb[0] * sb[1], sb[2]))
    return _out(_addmm_like("addbmm", input, mm(a2, b2), beta, alpha), out)


def chain_matmul(*matrices, out=None):
    """Product of 2-D matrices, left to right (legacy; see `linalg.multi_dot`)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        _check_tensor(m, "chain_matmul", f"matrices[{i}]")
        if m.ndim != 2:
            raise RuntimeError(f"chain_matmul(): Tensor {i} must be 2D (got {m.ndim}D)")
    r = matrices[0]
    if len(matrices) == 1:
        return _out(r.clone(), out)
    for m in matrices[1:]:
        r = mm(r, m)
    return _out(r, out)


def multi_dot(tensors, *, out=None):
    """Product of a chain of matrices; the first may be 1-D (a row), the last 1-D (a column)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    n = len(tensors)
    for i, t in enumerate(tensors):
        _check_tensor(t, "multi_dot", f"tensors[{i}]")
        ok = t.ndim == 2 or (t.ndim == 1 and i in (0, n - 1))
        if not ok:
            where_ = "first" if i == 0 else ("last" if i == n - 1 else None)
            if where_:
                raise RuntimeError(f"multi_dot(): the {where_} tensor must be 1D or 2D but got {t.ndim}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    r = tensors[0]
    for t in tensors[1:]:
        r = matmul(r, t)
    return _out(r, out)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along `dim` (inputs broadcast)."""
    if _amp.on:
        return _amp.run("vecdot", vecdot, (x, y), {"dim": dim, "out": out})
    _check_tensor(x, "vecdot", "x")
    _check_tensor(y, "vecdot", "y")
    if x._data.shape and y._data.shape:
        nd = max(x.ndim, y.ndim)
        d = wrap_dim(dim, nd)
        sx = (1,) * (nd - x.ndim) + tuple(x._data.shape)
        sy = (1,) * (nd - y.ndim) + tuple(y._data.shape)
        if sx[d] != sy[d]:
            raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same size along dim {dim}, "
                               f"but got shapes {list(x.shape)} and {list(y.shape)}")
    p = x * y
    return _out(p.sum(dim=dim), out)


# -- tensordot, einsum, kron -------------------------------------------------------------------------
def tensordot(a, b, dims=2, out=None):
    """Contract `dims` dimensions: an int n (last n of a with first n of b) or a pair of lists."""
    if _amp.on:
        return _amp.run("tensordot", tensordot, (a, b, dims), {"out": out})
    _check_tensor(a, "tensordot", "a")
    _check_tensor(b, "tensordot", "b")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral):
        dims = int(dims)
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = list(range(a.ndim - dims, a.ndim))
        db = list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dimensions")
        da, db = dims
        da = [da] if isinstance(da, numbers.Integral) else list(da)
        db = [db] if isinstance(db, numbers.Integral) else list(db)
        if len(da) != len(db):
            raise RuntimeError(f"both dimension lists should have same length (got {len(da)} and {len(db)})")
    da = [wrap_dim(d, a.ndim) for d in da]
    db = [wrap_dim(d, b.ndim) for d in db]
    if len(set(da)) != len(da) or len(set(db)) != len(db):
        raise RuntimeError(f"tensordot: repeated dimensions in dims ({da} and {db})")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"both inputs should have same dtype (got {_tn(a._dtype)} and {_tn(b._dtype)})")
    sa, sb = a._data.shape, b._data.shape
    for x, y in zip(da, db):
        if sa[x] != sb[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa[x]} in dim {x} "
                               f"and second has size {sb[y]} in dim {y}")
    free_a = [i for i in range(a.ndim) if i not in da]
    free_b = [i for i in range(b.ndim) if i not in db]
    ksize = math.prod(sa[i] for i in da)
    ma = math.prod(sa[i] for i in free_a)
    nb = math.prod(sb[i] for i in free_b)
    a2 = reshape(permute(a, *free_a, *da), (ma, ksize))
    b2 = reshape(permute(b, *db, *free_b), (ksize, nb))
    if a._dtype is _dt.bool_:
        a2, b2 = a2.to(_dt.int64), b2.to(_dt.int64)
    r = reshape(matmul(a2, b2), tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b))
    return _out(r, out)


def kron(input, other, *, out=None):
    """Kronecker product: result[i*s_b + j] = input[i] * other[j] along every dimension."""
    _check_tensor(input, "kron", "input")
    _check_tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input._data.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other._data.shape)
    ra, rb = [], []
    for x, y in zip(sa, sb):
        ra += [x, 1]
        rb += [1, y]
    p = reshape(input, tuple(ra)) * reshape(other, tuple(rb))
    return _out(reshape(p, tuple(x * y for x, y in zip(sa, sb))), out)


def _diagonal(input, offset=0, dim1=0, dim2=1):
    """View of the diagonal of the (dim1, dim2) planes, placed as the last dimension."""
    n = input.ndim
    a1, a2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if a1 == a2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    r = make_view(input, input._k["diagonal"](input._data, offset, a1, a2), ("diagonal", (offset, a1, a2)))
    if input._rg and _gstate.enabled:
        shape = input._data.shape
        rows, cols = shape[a1], shape[a2]
        r0, c0 = max(0, -offset), max(0, offset)
        L = max(0, min(rows - r0, cols - c0))
        rest = [i for i in range(n) if i not in (a1, a2)]
        fwd = rest + [a1, a2]
        inv = [0] * n
        for j, ax in enumerate(fwd):
            inv[ax] = j
        x = input

        def vjp(g):
            R = np.zeros((rows, L))
            C = np.zeros((L, cols))
            idx = np.arange(L)
            R[idx + r0, idx] = 1
            C[idx, idx + c0] = 1
            Rt, Ct = _host_like(R, g), _host_like(C, g)
            gm = matmul(Rt, reshape(g, tuple(g.shape) + (1,)) * Ct)      # rest + (rows, cols)
            return (grad_for(permute(gm, *inv), x),)
        record("DiagonalBackward0", r, (x,), vjp)
    return r


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """`linalg.diagonal`: the diagonals of the matrices in A (a view), as the last dimension."""
    _check_tensor(A, "linalg.diagonal", "A")
    return _diagonal(A, offset, dim1, dim2)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_sublist(args):
    """einsum(op1, sublist1, op2, sublist2, ..., [out_sublist]) -> (equation, operands)."""
    def term(sub):
        s = ""
        for x in sub:
            if x is Ellipsis:
                s += "..."
            elif isinstance(x, numbers.Integral) and 0 <= x < 52:
                s += _LETTERS[x]
            else:
                raise RuntimeError(f"einsum(): expected subscript to be within the range [0, 52), but got {x}")
        return s
    args = list(args)
    ops, terms = [], []
    while len(args) >= 2 and isinstance(args[0], Tensor):
        ops.append(args.pop(0))
        terms.append(term(args.pop(0)))
    eq = ",".join(terms)
    if args:
        if len(args) != 1 or isinstance(args[0], Tensor):
            raise RuntimeError("einsum(): in sublist format, expected operand, sublist pairs followed by "
                               "an optional output sublist")
        eq += "->" + term(args[0])
    return eq, ops


def _parse_term(term, eq_offset, what):
    """A term of the equation as a list of labels (letters) with '...' for an ellipsis."""
    out = []
    i = 0
    ell = False
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for {what} that is not part of any ellipsis")
            if ell:
                raise RuntimeError(f"einsum(): found '.' for {what} for which an ellipsis was already found")
            out.append("...")
            ell = True
            i += 3
            continue
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq_offset + i} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
        out.append(c)
        i += 1
    return out


def einsum(*args):
    """Einstein summation: `einsum("ij,jk->ik", a, b)`, implicit output (`"ij,jk"`: the labels seen
    once, in alphabetical order), `...` broadcasting, repeated labels within an operand (diagonals),
    size-1 broadcasting, and the sublist format `einsum(a, [0, 1], b, [1, 2], [0, 2])`. Computed by
    contracting operands left to right with permute/reshape/matmul/sum, so it is differentiable
    (twice and more)."""
    if _amp.on and _amp.listed("einsum", args):
        return _amp.run("einsum", einsum, args)
    if not args:
        raise RuntimeError("einsum(): must specify the equation string and at least one operand")
    if isinstance(args[0], str):
        eq = args[0]
        ops = list(args[1:])
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
    else:
        eq, ops = _einsum_sublist(args)
    for i, o in enumerate(ops):
        _check_tensor(o, "einsum", f"operands[{i}]")
    eq = eq.replace(" ", "")
    if eq.count("->") > 1:
        raise RuntimeError("einsum(): more than one '->' found in the equation")
    lhs, arrow, rhs = eq.partition("->")
    if "-" in lhs or ">" in lhs or "-" in rhs or ">" in rhs:
        raise RuntimeError("einsum(): '->' must be the only arrow and must be complete")
    terms_s = lhs.split(",")
    if len(terms_s) > len(ops):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms_s) < len(ops):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if not ops:
        raise RuntimeError("einsum(): must provide at least one operand")
    check_same_device(*ops)
    off = 0
    terms = []
    for i, ts in enumerate(terms_s):
        terms.append(_parse_term(ts, off, f"operand {i}"))
        off += len(ts) + 1

    # expand ellipses into labels ('.', j), right-aligned across operands (they broadcast)
    n_ell = 0
    for i, (t, o) in enumerate(zip(terms, ops)):
        n_lab = len(t) - (1 if "..." in t else 0)
        if "..." in t:
            if o.ndim < n_lab:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_lab}) is more "
                                   f"than the number of dimensions ({o.ndim}) for operand {i}")
            n_ell = max(n_ell, o.ndim - n_lab)
        elif o.ndim != n_lab:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_lab}) does not match "
                               f"the number of dimensions ({o.ndim}) for operand {i} and no ellipsis was given")
    labels = []
    for t, o in zip(terms, ops):
        n_lab = len(t) - (1 if "..." in t else 0)
        lab = []
        for c in t:
            if c == "...":
                k = o.ndim - n_lab
                lab += [(".", n_ell - k + j) for j in range(k)]
            else:
                lab.append(c)
        labels.append(lab)

    # sizes: equal, or 1 (broadcast)
    size = {}
    for i, (lab, o) in enumerate(zip(labels, ops)):
        seen = {}
        for l, s in zip(lab, o._data.shape):
            if l in seen:
                if seen[l] != s:
                    raise RuntimeError(f"einsum(): subscript {l} is repeated for operand {i} but the sizes "
                                       f"don't match, {s} != {seen[l]}")
                continue
            seen[l] = s
            prev = size.get(l)
            if prev is None or prev == 1:
                size[l] = s
            elif s != prev and s != 1:
                name = l if isinstance(l, str) else "..."
                raise RuntimeError(f"einsum(): subscript {name} has size {s} for operand {i} which does not "
                                   f"broadcast with previously seen size {prev}")

    # output labels
    ell_labels = [(".", j) for j in range(n_ell)]
    if arrow:
        out_t = _parse_term(rhs, len(lhs) + 2, "the output")
        out_labels = []
        for c in out_t:
            if c == "...":
                out_labels += ell_labels
                continue
            if c in out_labels:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in size:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any "
                                   "input operand")
            out_labels.append(c)
    else:
        counts = collections.Counter(l for lab in labels for l in lab if isinstance(l, str))
        out_labels = ell_labels + sorted(c for c, n in counts.items() if n == 1)

    # common dtype (bool sums as int64, like PyTorch's sum)
    dt = ops[0]._dtype
    for o in ops[1:]:
        dt = _dt.promote_types(dt, o._dtype)
    if dt is _dt.bool_:
        dt = _dt.int64
    ops = [o if o._dtype is dt else o.to(dt) for o in ops]

    # per operand: take diagonals of repeated labels
    cur = []
    for lab, o in zip(labels, ops):
        lab = list(lab)
        while len(set(lab)) != len(lab):
            for p in range(len(lab)):
                q = lab.index(lab[p], p + 1) if lab[p] in lab[p + 1:] else -1
                if q >= 0:
                    break
            l = lab[p]
            o = _diagonal(o, 0, p, q)
            lab = [x for j, x in enumerate(lab) if j not in (p, q)] + [l]
        cur.append((o, lab))

    def _sum_labels(o, lab, drop):
        axes = tuple(j for j, l in enumerate(lab) if l in drop)
        if not axes:
            return o, lab
        return o.sum(dim=axes, dtype=o._dtype), [l for l in lab if l not in drop]

    out_set = set(out_labels)
    # contract left to right; a label is summed as soon as no later operand nor the output needs it
    res, rlab = cur[0]
    for idx in range(1, len(cur)):
        b, blab = cur[idx]
        later = set(out_set)
        for _, lab in cur[idx + 1:]:
            later.update(lab)
        res, rlab = _sum_labels(res, rlab, set(rlab) - later - set(blab))
        b, blab = _sum_labels(b, blab, set(blab) - later - set(rlab))
        res, rlab = _contract(res, rlab, b, blab, later)
    res, rlab = _sum_labels(res, rlab, set(rlab) - out_set)

    # order as the output
    if rlab != out_labels:
        res = permute(res, *[rlab.index(l) for l in out_labels])
    elif any(res is o for o in ops):
        res = reshape(res, tuple(res._data.shape))       # a view, never the operand itself
    return res


def _contract(a, la, b, lb, keep):
    """Contract a (labels la) with b (labels lb), keeping labels in `keep` and summing the shared rest."""
    sa, sb = a._data.shape, b._data.shape
    batch = [l for l in la if l in lb and l in keep]
    contr = [l for l in la if l in lb and l not in keep]
    a_only = [l for l in la if l not in lb]
    b_only = [l for l in lb if l not in la]
    # a contracted label of size 1 on one side (broadcast): sum the other side over it first
    sum_a = [l for l in contr if sa[la.index(l)] != sb[lb.index(l)] and sb[lb.index(l)] == 1]
    sum_b = [l for l in contr if sa[la.index(l)] != sb[lb.index(l)] and sa[la.index(l)] == 1]
    if sum_a:
        a = a.sum(dim=tuple(la.index(l) for l in sum_a), keepdim=True, dtype=a._dtype)
        sa = a._data.shape
    if sum_b:
        b = b.sum(dim=tuple(lb.index(l) for l in sum_b), keepdim=True, dtype=b._dtype)
        sb = b._data.shape
    pa = [la.index(l) for l in batch + a_only + contr]
    pb = [lb.index(l) for l in batch + contr + b_only]
    if pa != list(range(len(la))):
        a = permute(a, *pa)
    if pb != list(range(len(lb))):
        b = permute(b, *pb)
    bsa = tuple(sa[la.index(l)] for l in batch)
    bsb = tuple(sb[lb.index(l)] for l in batch)
    m = math.prod(sa[la.index(l)] for l in a_only)
    kk = math.prod(sa[la.index(l)] for l in contr)
    n = math.prod(sb[lb.index(l)] for l in b_only)
    a = reshape(a, bsa + (m, kk))
    b = reshape(b, bsb + (kk, n))
    # a pair with no summed label is a product, as in PyTorch (so autocast leaves it alone)
    r = matmul(a, b) if contr else a * b
    bs = broadcast_shapes(bsa, bsb)
    r = reshape(r, bs + tuple(sa[la.index(l)] for l in a_only) + tuple(sb[lb.index(l)] for l in b_only))
    return r, batch + a_only + b_only


# -- cross, trace -----------------------------------------------------------------------------------
def _shift_matrix(k, like):
    """P (3x3) with (v @ P)[i] == v[(i + k) % 3]."""
    P = np.zeros((3, 3))
    for i in range(3):
        P[(i + k) % 3, i] = 1
    return _host_like(P, like)


def _movedim_last(x, d):
    n = x.ndim
    if d == n - 1:
        return x
    return permute(x, *[i for i in range(n) if i != d], d)


def _movedim_back(x, d):
    n = x.ndim
    if d == n - 1:
        return x
    order = list(range(n - 1))
    order.insert(d, n - 1)
    return permute(x, *order)


def linalg_cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along `dim` (inputs broadcast; same number of dimensions)."""
    if _amp.on:
        return _amp.run("cross", linalg_cross, (input, other), {"dim": dim, "out": out})
    _check_tensor(input, "linalg.cross", "input")
    _check_tensor(other, "linalg.cross", "other")
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions (got shapes "
                           f"{list(input.shape)} and {list(other.shape)}).")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"expected scalar type {_tn(input._dtype)} but found {_tn(other._dtype)}")
    check_same_device(input, other)
    n = input.ndim
    d = wrap_dim(dim, n)
    sa, sb = input._data.shape, other._data.shape
    if sa[d] != 3 or sb[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {sa[d]} and {sb[d]}")
    try:
        broadcast_shapes(sa, sb)
    except RuntimeError as e:
        raise RuntimeError(f"linalg.cross: shapes {list(sa)} and {list(sb)} do not broadcast: {e}") from None
    if input._dtype is _dt.bool_:
        raise NotImplementedError("\"linalg_cross\" not implemented for 'Bool'")
    a, b = _movedim_last(input, d), _movedim_last(other, d)
    P1, P2 = _shift_matrix(1, a), _shift_matrix(2, a)
    c = matmul(a, P1) * matmul(b, P2) - matmul(a, P2) * matmul(b, P1)
    return _out(_movedim_back(c, d), out)


def cross(input, other, dim=None, *, out=None):
    """Cross product along `dim`; without `dim`, the first dimension of size 3 (deprecated, like PyTorch)."""
    if _amp.on:
        return _amp.run("cross", cross, (input, other, dim), {"out": out})
    _check_tensor(input, "cross", "input")
    _check_tensor(other, "cross", "other")
    if dim is None:
        warnings.warn("Using cross without specifying the dim arg is deprecated. Please either pass the "
                      "dim explicitly or simply use linalg.cross.", UserWarning, stacklevel=2)
        shape = input._data.shape
        if input.ndim == other.ndim:
            try:
                shape = broadcast_shapes(input._data.shape, other._data.shape)
            except RuntimeError:
                pass
        dims = [i for i, s in enumerate(shape) if s == 3]
        if not dims:
            raise RuntimeError(f"no dimension of size 3 in input (shape {list(input.shape)})")
        dim = dims[0]
    return linalg_cross(input, other, dim=dim, out=out)


def trace(input):
    """Sum of the main diagonal of a 2-D tensor (integer inputs sum as int64)."""
    if _amp.on:
        return _amp.run("trace", trace, (input,))
    _check_tensor(input, "trace", "input")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input._dtype is _dt.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    r = _diagonal(input, 0, 0, 1).sum()
    if r.grad_fn is not None:
        r.grad_fn._name = "TraceBackward0"
    return r


# -- inverse, solve, gesv, LU ----------------------------------------------------------------------
def inverse(input, *, out=None):
    """Inverse of a square matrix or of a batch of them; raises `LinAlgError` (a RuntimeError)
    when a matrix is singular."""
    if _amp.on:
        return _amp.run("inverse", inverse, (input,), {"out": out})
    _check_tensor(input, "inverse", "input")
    _check_square(input, "linalg.inv")
    _check_float(input, "linalg.inv")
    k = input._k
    if 0 in input._data.shape:
        data = k["copy"](input._data)
    else:
        data = _linalg_kernel("linalg.inv", "inv", k, input._data)
    r = _make(data, input._dtype, k, input._dev)
    if input._rg and _gstate.enabled:
        x = input
        y = r

        def vjp(g):
            yt = _mT(y)
            return (-matmul(matmul(yt, g), yt),)
        record("LinalgInvExBackward0", r, (x,), vjp, saved=(r,))
    return _out(r, out)


inv = inverse


def _solve_mat(A, B):
    """X with A X = B: A (*, n, n), B (*, n, k); batch dimensions broadcast."""
    k = A._k
    batch = broadcast_shapes(A._data.shape[:-2], B._data.shape[:-2])
    n, kk = A._data.shape[-1], B._data.shape[-1]
    ad, bd = A._data, B._data
    if A._data.shape[:-2] != batch:
        ad = k["broadcast_to"](ad, batch + (n, n))
    if B._data.shape[:-2] != batch:
        bd = k["broadcast_to"](bd, batch + (n, kk))
    if n == 0 or kk == 0 or 0 in batch:
        data = k["full"](batch + (n, kk), 0, A._dtype.name)
    else:
        data = _linalg_kernel("linalg.solve", "solve", k, ad, bd)
    r = _make(data, A._dtype, k, A._dev)
    if _gstate.enabled and (A._rg or B._rg):
        X = r

        def vjp(g):
            gB = _solve_mat(_mT(A), g)
            ga = grad_for(-matmul(gB, _mT(X)), A) if A._rg else None
            gb = grad_for(gB, B) if B._rg else None
            return ga, gb
        record("LinalgSolveExBackward0", r, (A, B), vjp, saved=(A, r))
    return r


def solve(A, B, *, left=True, out=None):
    """`linalg.solve`: X with A X = B (or X A = B when left=False). A is (*, n, n); B is (*, n, k) or
    a batch of vectors (*, n) (when B is 1-D or has A's shape without the last dimension); batch
    dimensions broadcast. A singular A raises `LinAlgError` (a RuntimeError)."""
    if _amp.on:
        return _amp.run("solve", solve, (A, B), {"left": left, "out": out})
    _check_tensor(A, "linalg.solve", "A")
    _check_tensor(B, "linalg.solve", "B")
    _check_square(A, "linalg.solve")
    _check_float(A, "linalg.solve")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_tn(A._dtype)} and B of type {_tn(B._dtype)} instead")
    check_same_device(A, B)
    sa, sb = A._data.shape, B._data.shape
    n = sa[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and sb == sa[:-1])
    eqn = "AX = B" if left else "XA = B"
    if B.ndim == 0:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 1 dimension.")
    if not left:
        if vector or B._data.shape[-1] != n:
            bshape = (sb[-1], 1) if vector else sb[-2:]
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eqn} "
                               f"({n}x{n} and {_xs(bshape)}) (A has shape {list(sa)}, B has shape {list(sb)})")
        return _out(_mT(solve(_mT(A), _mT(B))), out)
    rows = sb[-1] if vector else sb[-2]
    if rows != n:
        bshape = (sb[-1], 1) if vector else sb[-2:]
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eqn} "
                           f"({n}x{n} and {_xs(bshape)}) (A has shape {list(sa)}, B has shape {list(sb)})")
    try:
        broadcast_shapes(sa[:-2], sb[:-1] if vector else sb[:-2])
    except RuntimeError as e:
        raise RuntimeError(f"linalg.solve: the batch dimensions of A {list(sa)} and B {list(sb)} do not "
                           f"broadcast: {e}") from None
    if vector:
        X = _solve_mat(A, reshape(B, tuple(sb) + (1,)))
        return _out(reshape(X, tuple(X.shape[:-1])), out)
    return _out(_solve_mat(A, B), out)


def _lu_host(a):
    """LAPACK getrf on host arrays (..., n, n): packed LU with partial pivoting (first maximal |pivot|),
    and 1-based pivots (row i was swapped with row piv[i] - 1)."""
    a = np.array(a, dtype=np.float64 if a.dtype != np.float32 else np.float32, copy=True)
    shape = a.shape
    n = shape[-1]
    m = shape[-2]
    flat = a.reshape((-1, m, n))
    nb = flat.shape[0]
    piv = np.zeros((nb, min(m, n)), dtype=np.int32)
    rows = np.arange(nb)
    for k in range(min(m, n)):
        p = np.argmax(np.abs(flat[:, k:, k]), axis=1) + k
        piv[:, k] = p + 1
        rk = flat[rows, k].copy()
        flat[rows, k] = flat[rows, p]
        flat[rows, p] = rk
        pivot = flat[:, k, k]
        # a zero pivot (singular matrix) leaves the column unscaled, as LAPACK does
        safe = np.where(pivot == 0, 1, pivot)
        flat[:, k + 1:, k] /= safe[:, None]
        flat[:, k + 1:, k + 1:] -= flat[:, k + 1:, k:k + 1] * flat[:, k:k + 1, k + 1:]
    return flat.reshape(shape), piv.reshape(shape[:-2] + (min(m, n),))


LUFactor = collections.namedtuple("LUFactor", ["LU", "pivots"])


def lu_factor(A, *, pivot=True):
    """`linalg.lu_factor`: (LU, pivots) as LAPACK's getrf (computed on the host; not differentiable)."""
    _check_tensor(A, "linalg.lu_factor", "A")
    if A.ndim < 2:
        raise RuntimeError("linalg.lu_factor: The input tensor A must have at least 2 dimensions.")
    _check_float(A, "linalg.lu_factor")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on this backend.")
    lu, piv = _lu_host(A._host())
    LU = _host_like(lu, A)
    P = _host_like(piv, A, _dt.int32)
    _nondiff_node("LinalgLuFactor", [LU], [A])
    return LUFactor(LU, P)


def gesv(B, A):
    """Legacy (PyTorch 0.2) `gesv(B, A) -> (X, LU)`: X solves A X = B (use `linalg.solve(A, B)` in new
    code); LU is A's packed LU factorization with partial pivoting, as LAPACK's getrf returns it
    (computed on the host, not differentiable)."""
    _check_tensor(B, "gesv", "B")
    _check_tensor(A, "gesv", "A")
    X = solve(A, B)
    LU = lu_factor(A.detach()).LU
    return X, LU


# -- determinants ---------------------------------------------------------------------------------
def _det_host(A):
    h = A._host()
    if 0 in h.shape[:-2]:
        return np.zeros(h.shape[:-2], dtype=h.dtype)
    return np.asarray(np.linalg.det(h), dtype=h.dtype)


def _cofactors(A):
    """The cofactor matrix C of each matrix in A (d det(A) / dA == C), from determinants of minors:
    differentiable, and valid for singular matrices too."""
    n = A._data.shape[-1]
    batch = A._data.shape[:-2]
    if n == 1:
        return _host_like(np.ones(batch + (1, 1)), A)
    S = np.zeros((n, n - 1, n))              # S[i]: the identity without row i
    for i in range(n):
        S[i] = np.delete(np.eye(n), i, axis=0)
    Si = _host_like(S.reshape(n, 1, n - 1, n), A)
    SjT = _host_like(np.swapaxes(S, 1, 2).reshape(1, n, n, n - 1), A)
    A5 = reshape(A, batch + (1, 1, n, n))
    minors = matmul(matmul(Si, A5), SjT)       # batch + (n, n, n-1, n-1)
    sign = (-1.0) ** np.add.outer(np.arange(n), np.arange(n))
    return det(minors) * _host_like(sign, A)


def det(A):
    """Determinant of a square matrix or of a batch of them (`linalg.det`). The value is computed on
    the host; the gradient is det(A) * inverse(A)^T (cofactors for singular matrices)."""
    _check_tensor(A, "linalg.det", "A")
    _check_square(A, "linalg.det")
    _check_float(A, "linalg.det")
    d = _det_host(A)
    r = _host_like(d, A)
    if A._rg and _gstate.enabled:
        x = A
        nonsingular = bool(np.all((d != 0) & np.isfinite(d)))
        n = A._data.shape[-1]
        batch = A._data.shape[:-2]

        def vjp(g):
            if n == 0:
                return (zeros_like_grad(x),)
            gm = reshape(g, batch + (1, 1))
            if nonsingular:
                try:
                    return (reshape(g * r, batch + (1, 1)) * _mT(inverse(x)),)
                except LinAlgError:
                    pass
            return (gm * _cofactors(x),)
        record("LinalgDetBackward0", r, (x,), vjp, saved=(x, r))
    return r


SlogdetResult = collections.namedtuple("slogdet", ["sign", "logabsdet"])


def slogdet(A):
    """(sign, log|det|) of a square matrix or a batch of them; only logabsdet is differentiable."""
    _check_tensor(A, "linalg.slogdet", "A")
    _check_square(A, "linalg.slogdet")
    _check_float(A, "linalg.slogdet")
    h = A._host()
    if 0 in h.shape[:-2]:
        s = np.zeros(h.shape[:-2], dtype=h.dtype)
        la = np.zeros(h.shape[:-2], dtype=h.dtype)
    else:
        s, la = np.linalg.slogdet(h)
    sign = _host_like(s, A)
    logabs = _host_like(la, A)
    if A._rg and _gstate.enabled:
        x = A
        n = A._data.shape[-1]
        batch = A._data.shape[:-2]
        nonsingular = bool(np.all(s != 0))

        def vjp(g):
            if n == 0:
                return (zeros_like_grad(x),)
            gm = reshape(g, batch + (1, 1))
            if nonsingular:
                try:
                    return (gm * _mT(inverse(x)),)
                except LinAlgError:
                    pass
            return (gm * _cofactors(x) / reshape(det(x), batch + (1, 1)),)
        record("LinalgSlogdetBackward0", logabs, (x,), vjp, saved=(x,))
    return SlogdetResult(sign, logabs)


def logdet(A):
    """log(det(A)): NaN where det(A) < 0 and -inf where det(A) == 0."""
    s, la = slogdet(A)
    return where(s < 0, float("nan"), la)


# -- norms ------------------------------------------------------------------------------------------
def _ord_name(o):
    if isinstance(o, float) and math.isinf(o):
        return "inf" if o > 0 else "-inf"
    if isinstance(o, float) and o.is_integer():
        return str(int(o))
    return str(o)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """`linalg.vector_norm`: (sum |x|^ord)^(1/ord) over `dim` (None: all elements); ord may be
    inf / -inf (max / min of |x|) or 0 (the number of non-zeros)."""
    if _amp.on:
        return _amp.run("vector_norm", vector_norm, (x, ord, dim, keepdim), {"dtype": dtype, "out": out})
    _check_tensor(x, "linalg.vector_norm", "x")
    if isinstance(ord, str) or not isinstance(ord, numbers.Real) or isinstance(ord, bool):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    if x._dtype.category != 2:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_tn(x._dtype)}")
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
        if dt.category != 2:
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got {_tn(dt)}")
        if dt is not x._dtype:
            x = x.to(dt)
    p = float(ord)
    shape = x._data.shape
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None
    axes = normalize_dims(dim, len(shape))
    reduced = math.prod(shape) if axes is None else math.prod(shape[a] for a in axes)
    if reduced == 0 and (p < 0 or math.isinf(p)):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_name(ord)} norm on an empty tensor "
                           "because the operation does not have an identity")
    k, dt = x._k, x._dtype
    xd = x._data
    ax = k["abs"](xd)
    if p == math.inf:
        data = k["max"](ax, axes, keepdim)
    elif p == -math.inf:
        data = k["min"](ax, axes, keepdim)
    elif p == 0:
        data = k["sum"](k["astype"](k["ne"](xd, 0), dt.name), axes, keepdim)
    elif p == 1:
        data = k["sum"](ax, axes, keepdim)
    elif p == 2:
        data = k["sqrt"](k["sum"](k["mul"](xd, xd), axes, keepdim))
    else:
        data = k["pow"](k["sum"](k["pow"](ax, p), axes, keepdim), 1.0 / p)
    r = _make(data, dt, k, x._dev)
    if x._rg and _gstate.enabled:
        src = x
        nrm = r

        def vjp(g):
            if p == 0:
                return (zeros_like_grad(src),)
            if not keepdim:
                g = _keep_dims(g, shape, axes)
                nr = _keep_dims(nrm, shape, axes)
            else:
                nr = nrm
            if p == 1:
                return (g * src.sign(),)
            zero = nr == 0
            if p == 2:
                scale = where(zero, 0.0, g / where(zero, 1.0, nr))
                return (src * scale,)
            if math.isinf(p):
                a = src.abs()
                mask = ((a == nr) | a.isnan()).to(dt)
                cnt = mask.sum(dim=axes, keepdim=True) if axes is not None else \
                    reshape(mask.sum(), (1,) * len(shape))
                return (src.sign() * mask * (g / cnt),)
            a = src.abs()
            if p < 1:
                # x == 0 entries get zero (as PyTorch); the norm is then nonzero unless all are zero
                ap = where(a == 0, 0.0, where(a == 0, 1.0, a).pow(p - 1))
                return (src.sign() * ap * g * nr.pow(1 - p),)
            scale = where(zero, 0.0, g / where(zero, 1.0, nr).pow(p - 1))
            if p < 2:
                return (src.sign() * a.pow(p - 1) * scale,)
            return (src * a.pow(p - 2) * scale,)
        record("LinalgVectorNormBackward0", r, (src,), vjp, saved=(src, r))
    return _out(r, out)


def _svdvals_host(x, d0, d1):
    h = x._host()
    n = h.ndim
    order = [i for i in range(n) if i not in (d0, d1)] + [d0, d1]
    h = np.transpose(h, order)
    if 0 in h.shape[-2:]:
        return np.zeros(h.shape[:-2] + (0,), dtype=h.dtype)
    return np.linalg.svd(h.astype(np.float64), compute_uv=False).astype(h.dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """`linalg.matrix_norm`: 'fro' (differentiable), 1 / -1 (max / min column |sum|), inf / -inf (rows),
    'nuc' and 2 / -2 (from singular values computed on the host; not differentiable)."""
    if _amp.on:
        return _amp.run("matrix_norm", matrix_norm, (A, ord, dim, keepdim), {"dtype": dtype, "out": out})
    _check_tensor(A, "linalg.matrix_norm", "A")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if A._dtype.category != 2:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_tn(A._dtype)}")
    if not isinstance(dim, (list, tuple)) or len(dim) != 2:
        got = " ".join(str(d) for d in dim) if isinstance(dim, (list, tuple)) else str(dim)
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {got}")
    d0, d1 = wrap_dim(dim[0], A.ndim), wrap_dim(dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
        if dt.category != 2:
            raise RuntimeError(f"linalg.matrix_norm: dtype should be floating point, but got {_tn(dt)}")
        A = A.to(dt)
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keepdim, out=out)
        if ord != "nuc":
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_name(ord)} not supported.")
    shape = A._data.shape
    if ord in ("nuc", 2, -2):
        sv = _svdvals_host(A, d0, d1)
        if ord == "nuc":
            v = sv.sum(-1)
        elif sv.shape[-1] == 0:
            raise RuntimeError(f"linalg.matrix_norm: the {ord} norm of an empty matrix is not defined")
        else:
            v = sv.max(-1) if ord == 2 else sv.min(-1)
        if keepdim:
            ks = list(shape)
            ks[d0] = ks[d1] = 1
            v = v.reshape(ks)
        r = _host_like(v, A)
        _nondiff_node(f"LinalgMatrixNorm[{ord}]", [r], [A])
        return _out(r, out)
    # 1/-1: reduce |A| over rows (d0) then max/min over columns (d1); inf/-inf the other way round
    first, second = (d0, d1) if abs(ord) == 1 else (d1, d0)
    s = vector_norm(A, 1, first, keepdim=True)
    if shape[second] == 0:
        ks = list(shape)
        ks[first] = ks[second] = 1
        r = _make(A._k["full"](tuple(ks), 0, A._dtype.name), A._dtype, A._k, A._dev)
        r = _zero_grad_node("LinalgMatrixNormBackward0", r, (A,))
    else:
        r = vector_norm(s, math.inf if ord > 0 else -math.inf, second, keepdim=True)
    if not keepdim:
        r = reshape(r, tuple(sz for i, sz in enumerate(shape) if i not in (d0, d1)))
    return _out(r, out)


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """`linalg.norm`: a vector norm (dim an int or 1-tuple, or A 1-D) or a matrix norm (dim a 2-tuple,
    or A 2-D with ord given); with ord and dim None, the 2-norm of all elements."""
    _check_tensor(A, "linalg.norm", "A")
    if dim is not None:
        dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if A.ndim == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    if A.ndim == 2 or (A.ndim == 1 and isinstance(ord, str)):
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                       f"Got {A.ndim}D.")


def matrix_power(A, n, *, out=None):
    """A @ A @ ... (n times) for square A (or a batch); n == 0 gives identities, n < 0 powers of the
    inverse."""
    _check_tensor(A, "linalg.matrix_power", "A")
    _check_square(A, "linalg.matrix_power")
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    n = int(n)
    shape = A._data.shape
    if n == 0:
        eye = np.broadcast_to(np.eye(shape[-1]), shape)
        r = _host_like(eye, A)
        return _out(_zero_grad_node("LinalgMatrixPowerBackward0", r, (A,)), out)
    if n < 0:
        A = inverse(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    if result is A:
        result = result.clone()
    return _out(result, out)


# -- Tensor methods --------------------------------------------------------------------------------
def _rmatmul(self, other):
    if isinstance(other, np.ndarray):
        from .creation import tensor
        return matmul(tensor(other, device=self._dev), self)
    if isinstance(other, Tensor):
        return matmul(other, self)
    return NotImplemented


def _inplace(fn):
    def op_(self, *args, **kwargs):
        check_inplace(self)
        src = snapshot(self) if (self._rg and _gstate.enabled) else self
        return commit_inplace(self, fn(src, *args, **kwargs))
    op_.__name__ = fn.__name__ + "_"
    return op_


def _attach():
    T = Tensor
    for name in ("matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv",
                 "addr", "addbmm", "baddbmm", "kron", "cross", "trace", "inverse", "det", "logdet",
                 "slogdet", "matrix_power"):
        setattr(T, name, globals()[name])
    T.__matmul__ = lambda a, b: matmul(a, b) if isinstance(b, Tensor) else (
        matmul(a, _as_operand(b, a)) if isinstance(b, np.ndarray) else NotImplemented)
    T.__rmatmul__ = _rmatmul
    T.gesv = lambda self, A: gesv(self, A)
    for name in ("addmm", "addmv", "addr", "addbmm", "baddbmm"):
        setattr(T, name + "_", _inplace(globals()[name]))


def _as_operand(arr, like):
    from .creation import tensor
    return tensor(arr, device=like._dev)


_attach()

PUBLIC = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv", "addr",
          "addbmm", "baddbmm", "chain_matmul", "einsum", "tensordot", "kron", "cross", "trace", "inverse",
          "gesv", "det", "logdet", "slogdet", "matrix_power"]
