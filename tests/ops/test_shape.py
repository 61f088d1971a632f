"""Shape, view and joining ops: values against float64 NumPy (contiguous, non-contiguous, empty and
0-d inputs), view aliasing and shared version counters, PyTorch's errors, and first and second
gradients against finite differences."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug.autograd import gradcheck, gradgradcheck


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def arr(*shape, seed=0):
    return np.random.default_rng(seed + 7 * len(shape)).uniform(-2, 2, size=shape)


def tp(a, noncontig=False, dtype=torch.float64):
    """A tensor with a's values; noncontig: the same values through a transposed (permuted) view."""
    if noncontig and a.ndim >= 2:
        rev = tuple(range(a.ndim - 1, -1, -1))
        t = torch.tensor(np.ascontiguousarray(a.transpose(rev)), dtype=dtype).permute(*rev)
        assert t.is_contiguous() == (a.size == 0 or sum(n > 1 for n in a.shape) < 2)
        return t
    return torch.tensor(a, dtype=dtype)


def r(*shape, seed=0):
    """A float64 leaf requiring grad."""
    return torch.tensor(arr(*shape, seed=seed), requires_grad=True)


def nc(*shape, seed=0):
    """A non-contiguous float64 leaf requiring grad (a permuted view, detached)."""
    return tp(arr(*shape, seed=seed), noncontig=True).detach().requires_grad_()


def check(out, ref):
    if isinstance(ref, (list, tuple)):
        assert isinstance(out, tuple), type(out)
        assert len(out) == len(ref)
        for o, e in zip(out, ref):
            check(o, e)
        return
    ref = np.asarray(ref, dtype=np.float64)
    assert tuple(out.shape) == ref.shape, (tuple(out.shape), ref.shape)
    np.testing.assert_array_equal(f64(out), ref)


# -- NumPy references that are not one NumPy call -------------------------------------------------
def np_chunk(a, chunks, dim=0):
    n = a.shape[dim]
    size = -(-n // chunks)
    if n == 0:
        return [a] * chunks
    return np.split(a, list(range(size, n, size)), axis=dim)


def np_split(a, s, dim=0):
    if isinstance(s, list):
        return np.split(a, list(np.cumsum(s)[:-1]), axis=dim)
    n = a.shape[dim]
    return np.split(a, list(range(s, n, s)), axis=dim) if n else [a]


def np_embed(v, offset=0, d1=-2, d2=-1):
    n = v.shape[-1]
    m = n + abs(offset)
    out = np.zeros(v.shape[:-1] + (m, m))
    for i in range(n):
        out[..., i + max(-offset, 0), i + max(offset, 0)] = v[..., i]
    nd = v.ndim + 1
    return np.moveaxis(out, (nd - 2, nd - 1), (d1 % nd, d2 % nd))


def np_repeat(a, reps):
    return np.tile(a, reps)


# (id, op on tensors, NumPy reference on arrays, input arrays)
A34, A234, A7 = arr(3, 4), arr(2, 3, 4), arr(7)
VALUE_CASES = [
    ("reshape", lambda x: x.reshape(2, -1), lambda a: a.reshape(2, -1), [A34]),
    ("reshape_fn", lambda x: torch.reshape(x, (4, 3)), lambda a: a.reshape(4, 3), [A34]),
    ("reshape_0d", lambda x: x.reshape(1, 1), lambda a: a.reshape(1, 1), [np.array(2.5)]),
    ("reshape_empty", lambda x: x.reshape(0, 4, 2), lambda a: a.reshape(0, 4, 2), [np.zeros((2, 0, 4))]),
    ("view_as", lambda x: x.reshape(12).view_as(torch.zeros(4, 3)), lambda a: a.reshape(4, 3), [A34]),
    ("reshape_as", lambda x: x.reshape_as(torch.zeros(6, 2)), lambda a: a.reshape(6, 2), [A34]),
    ("flatten", lambda x: x.flatten(), lambda a: a.reshape(-1), [A234]),
    ("flatten_1", lambda x: torch.flatten(x, 1), lambda a: a.reshape(2, 12), [A234]),
    ("flatten_01", lambda x: x.flatten(0, 1), lambda a: a.reshape(6, 4), [A234]),
    ("flatten_0d", lambda x: x.flatten(), lambda a: a.reshape(1), [np.array(3.0)]),
    ("unflatten", lambda x: x.unflatten(1, (2, -1)), lambda a: a.reshape(3, 2, 2), [A34]),
    ("ravel", torch.ravel, np.ravel, [A234]),
    ("expand", lambda x: x.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [arr(3, 1)]),
    ("expand_keep", lambda x: x.expand(-1, 4), lambda a: np.broadcast_to(a, (3, 4)), [arr(3, 1)]),
    ("expand_as", lambda x: x.expand_as(torch.zeros(5, 3)), lambda a: np.broadcast_to(a, (5, 3)), [arr(3)]),
    ("broadcast_to", lambda x: torch.broadcast_to(x, (2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)),
     [arr(1, 4)]),
    ("broadcast_tensors", lambda x, y: torch.broadcast_tensors(x, y), lambda a, b: np.broadcast_arrays(a, b),
     [arr(3, 1), arr(4)]),
    ("permute", lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [A234]),
    ("permute_fn", lambda x: torch.permute(x, (1, 0, 2)), lambda a: a.transpose(1, 0, 2), [A234]),
    ("transpose", lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2), [A234]),
    ("swapaxes", lambda x: torch.swapaxes(x, -1, 1), lambda a: np.swapaxes(a, -1, 1), [A234]),
    ("swapdims", lambda x: x.swapdims(0, 1), lambda a: np.swapaxes(a, 0, 1), [A234]),
    ("t", torch.t, lambda a: a.T, [A34]),
    ("t_1d", lambda x: x.t(), lambda a: a, [A7]),
    ("t_0d", lambda x: x.t(), lambda a: a, [np.array(1.5)]),
    ("T", lambda x: x.T, lambda a: a.T, [A234]),
    ("mT", lambda x: x.mT, lambda a: np.swapaxes(a, -1, -2), [A234]),
    ("movedim", lambda x: x.movedim((0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0)), [A234]),
    ("moveaxis", lambda x: torch.moveaxis(x, -1, 0), lambda a: np.moveaxis(a, -1, 0), [A234]),
    ("squeeze", lambda x: x.squeeze(), np.squeeze, [arr(1, 3, 1, 2)]),
    ("squeeze_dim", lambda x: x.squeeze(2), lambda a: np.squeeze(a, 2), [arr(1, 3, 1, 2)]),
    ("squeeze_noop", lambda x: x.squeeze(1), lambda a: a, [arr(1, 3, 1, 2)]),
    ("squeeze_tuple", lambda x: torch.squeeze(x, (0, 2, 3)), lambda a: np.squeeze(a, (0, 2)),
     [arr(1, 3, 1, 2)]),
    ("squeeze_0d", lambda x: x.squeeze(0), lambda a: a, [np.array(2.0)]),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda a: np.expand_dims(a, 1), [A34]),
    ("unsqueeze_neg", lambda x: torch.unsqueeze(x, -1), lambda a: np.expand_dims(a, -1), [A34]),
    ("unsqueeze_0d", lambda x: x.unsqueeze(0), lambda a: a.reshape(1), [np.array(2.0)]),
    ("contiguous", lambda x: x.contiguous(), lambda a: a, [A234]),
    ("cat0", lambda x, y: torch.cat([x, y]), lambda a, b: np.concatenate([a, b]), [A34, arr(2, 4)]),
    ("cat1", lambda x, y: torch.cat((x, y), dim=1), lambda a, b: np.concatenate([a, b], 1), [A34, arr(3, 2)]),
    ("cat_neg", lambda x, y, z: torch.cat([x, y, z], -1), lambda a, b, c: np.concatenate([a, b, c], -1),
     [A34, arr(3, 1), arr(3, 0)]),
    ("cat_legacy_empty", lambda x, y: torch.cat([y, x, y], 1), lambda a, b: a, [A34, np.zeros(0)]),
    ("concat", lambda x, y: torch.concat([x, y], 0), lambda a, b: np.concatenate([a, b]), [A7, arr(2)]),
    ("concatenate", lambda x, y: torch.concatenate([x, y], axis=1), lambda a, b: np.concatenate([a, b], 1),
     [A34, A34]),
    ("stack", lambda x, y: torch.stack([x, y]), lambda a, b: np.stack([a, b]), [A34, arr(3, 4, seed=1)]),
    ("stack1", lambda x, y: torch.stack([x, y], 1), lambda a, b: np.stack([a, b], 1), [A34, A34]),
    ("stack_last", lambda x, y: torch.stack([x, y], -1), lambda a, b: np.stack([a, b], -1), [A34, A34]),
    ("stack_0d", lambda x, y: torch.stack([x, y]), lambda a, b: np.stack([a, b]), [np.array(1.), np.array(2.)]),
    ("hstack_1d", lambda x, y: torch.hstack([x, y]), lambda a, b: np.hstack([a, b]), [A7, arr(2)]),
    ("hstack_2d", lambda x, y: torch.hstack([x, y]), lambda a, b: np.hstack([a, b]), [A34, arr(3, 2)]),
    ("vstack", lambda x, y: torch.vstack([x, y]), lambda a, b: np.vstack([a, b]), [arr(4), A34]),
    ("row_stack", lambda x, y: torch.row_stack((x, y)), lambda a, b: np.vstack([a, b]), [A34, A34]),
    ("dstack", lambda x, y: torch.dstack([x, y]), lambda a, b: np.dstack([a, b]), [A34, A34]),
    ("dstack_1d", lambda x, y: torch.dstack([x, y]), lambda a, b: np.dstack([a, b]), [A7, A7]),
    ("column_stack", lambda x, y, z: torch.column_stack([x, y, z]),
     lambda a, b, c: np.column_stack([a, b, c]), [arr(3), arr(3, 2), np.array([1., 2., 3.])]),
    ("chunk", lambda x: x.chunk(3), lambda a: np_chunk(a, 3), [A7]),
    ("chunk_fewer", lambda x: torch.chunk(x, 4), lambda a: np_chunk(a, 4), [arr(6)]),
    ("chunk_dim", lambda x: x.chunk(2, dim=1), lambda a: np_chunk(a, 2, 1), [A34]),
    ("chunk_empty", lambda x: x.chunk(3), lambda a: np_chunk(a, 3), [np.zeros(0)]),
    ("split_int", lambda x: x.split(3), lambda a: np_split(a, 3), [A7]),
    ("split_list", lambda x: torch.split(x, [1, 3], dim=1), lambda a: np_split(a, [1, 3], 1), [A34]),
    ("split_empty", lambda x: x.split(2), lambda a: [a], [np.zeros(0)]),
    ("tensor_split", lambda x: x.tensor_split(3), lambda a: np.array_split(a, 3), [A7]),
    ("tensor_split_idx", lambda x: torch.tensor_split(x, [5, 2, -1, 9]),
     lambda a: np.array_split(a, [5, 2, -1, 9]), [A7]),
    ("tensor_split_dim", lambda x: x.tensor_split(torch.tensor([1, 3]), dim=1),
     lambda a: np.array_split(a, [1, 3], axis=1), [A34]),
    ("hsplit", lambda x: torch.hsplit(x, 2), lambda a: np.hsplit(a, 2), [A34]),
    ("vsplit", lambda x: torch.vsplit(x, [1]), lambda a: np.vsplit(a, [1]), [A34]),
    ("dsplit", lambda x: torch.dsplit(x, 2), lambda a: np.dsplit(a, 2), [A234]),
    ("unbind", lambda x: x.unbind(), lambda a: list(a), [A34]),
    ("unbind_dim", lambda x: torch.unbind(x, dim=-1), lambda a: list(np.moveaxis(a, -1, 0)), [A34]),
    ("narrow", lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3], [A34]),
    ("narrow_neg", lambda x: torch.narrow(x, -1, -3, 2), lambda a: a[:, 1:3], [A34]),
    ("narrow_empty", lambda x: x.narrow(0, 3, 0), lambda a: a[3:3], [A34]),
    ("select", lambda x: x.select(1, 2), lambda a: a[:, 2], [A34]),
    ("select_neg", lambda x: torch.select(x, 0, -1), lambda a: a[-1], [A234]),
    ("diagonal", lambda x: x.diagonal(), np.diagonal, [A34]),
    ("diagonal_off", lambda x: torch.diagonal(x, 1), lambda a: np.diagonal(a, 1), [A34]),
    ("diagonal_neg", lambda x: x.diagonal(-2), lambda a: np.diagonal(a, -2), [A34]),
    ("diagonal_far", lambda x: x.diagonal(7), lambda a: np.diagonal(a, 7), [A34]),
    ("diagonal_3d", lambda x: x.diagonal(-1, 2, 0), lambda a: np.diagonal(a, -1, 2, 0), [A234]),
    ("diagonal_1x", lambda x: x.diagonal(0, 0, 1), lambda a: np.diagonal(a, 0, 0, 1), [arr(1, 5)]),
    ("diag_1d", torch.diag, np.diag, [arr(4)]),
    ("diag_1d_off", lambda x: torch.diag(x, -2), lambda a: np.diag(a, -2), [arr(3)]),
    ("diag_2d", lambda x: x.diag(1), lambda a: np.diag(a, 1), [A34]),
    ("diag_embed", torch.diag_embed, np_embed, [A234]),
    ("diag_embed_dims", lambda x: torch.diag_embed(x, 1, 0, 2), lambda a: np_embed(a, 1, 0, 2), [A34]),
    ("diag_embed_swap", lambda x: x.diag_embed(-1, 2, 0), lambda a: np_embed(a, -1, 2, 0), [A34]),
    ("tril", torch.tril, np.tril, [A34]),
    ("tril_k", lambda x: x.tril(1), lambda a: np.tril(a, 1), [A234]),
    ("triu", lambda x: torch.triu(x, -1), lambda a: np.triu(a, -1), [A234]),
    ("triu_empty", torch.triu, np.triu, [np.zeros((0, 3))]),
    ("flip", lambda x: x.flip(0, 2), lambda a: np.flip(a, (0, 2)), [A234]),
    ("flip_fn", lambda x: torch.flip(x, [-1]), lambda a: np.flip(a, -1), [A234]),
    ("flip_kw", lambda x: torch.flip(x, dims=(0,)), lambda a: np.flip(a, 0), [A7]),
    ("fliplr", torch.fliplr, np.fliplr, [A34]),
    ("flipud", lambda x: x.flipud(), np.flipud, [A34]),
    ("roll", lambda x: x.roll(2), lambda a: np.roll(a, 2), [A34]),
    ("roll_dim", lambda x: torch.roll(x, -1, 1), lambda a: np.roll(a, -1, 1), [A34]),
    ("roll_dims", lambda x: x.roll((1, 5), (0, 2)), lambda a: np.roll(a, (1, 5), (0, 2)), [A234]),
    ("roll_empty", lambda x: x.roll(1, 0), lambda a: a, [np.zeros((0, 2))]),
    ("repeat", lambda x: x.repeat(2, 3), lambda a: np_repeat(a, (2, 3)), [A34]),
    ("repeat_lead", lambda x: x.repeat(2, 1, 2), lambda a: np_repeat(a, (2, 1, 2)), [A34]),
    ("repeat_zero", lambda x: x.repeat(0, 2), lambda a: np_repeat(a, (0, 2)), [A34]),
    ("repeat_0d", lambda x: x.repeat(3), lambda a: np_repeat(a, 3), [np.array(1.5)]),
    ("tile", lambda x: x.tile((2,)), lambda a: np.tile(a, 2), [A34]),
    ("tile_fn", lambda x: torch.tile(x, (2, 1, 1)), lambda a: np.tile(a, (2, 1, 1)), [A34]),
    ("repeat_interleave", lambda x: x.repeat_interleave(2), lambda a: np.repeat(a, 2), [A34]),
    ("repeat_interleave_dim", lambda x: torch.repeat_interleave(x, 3, dim=1), lambda a: np.repeat(a, 3, 1), [A34]),
    ("repeat_interleave_t", lambda x: x.repeat_interleave(torch.tensor([2, 0, 1]), dim=0),
     lambda a: np.repeat(a, [2, 0, 1], 0), [A34]),
    ("meshgrid_ij", lambda x, y: torch.meshgrid(x, y, indexing="ij"),
     lambda a, b: np.meshgrid(a, b, indexing="ij"), [arr(2), arr(3)]),
    ("meshgrid_xy", lambda x, y, z: torch.meshgrid([x, y, z], indexing="xy"),
     lambda a, b, c: np.meshgrid(a, b, c, indexing="xy"), [arr(2), arr(3), arr(4)]),
    ("atleast_1d", torch.atleast_1d, np.atleast_1d, [np.array(1.)]),
    ("atleast_2d", lambda x, y: torch.atleast_2d(x, y), lambda a, b: np.atleast_2d(a, b),
     [np.array(1.), arr(3)]),
    ("atleast_3d", lambda x, y, z: torch.atleast_3d([x, y, z]), lambda a, b, c: np.atleast_3d(a, b, c),
     [np.array(1.), arr(3), A34]),
]


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
@pytest.mark.parametrize("name,op,ref,inputs", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_match_numpy(name, op, ref, inputs, noncontig):
    """Forward values (and shapes) equal NumPy's, for contiguous and permuted (non-contiguous) inputs."""
    out = op(*[tp(a, noncontig) for a in inputs])
    expected = ref(*inputs)
    if isinstance(expected, (list, tuple)):
        check(out, list(expected))
    else:
        check(out, expected)


@pytest.mark.parametrize("name,op,ref,inputs",
                         [c for c in VALUE_CASES if c[0] in ("cat0", "stack", "chunk", "split_list", "flip",
                                                             "roll_dims", "repeat", "tril", "diag_2d",
                                                             "repeat_interleave_dim", "transpose", "narrow")],
                         ids=lambda c: c if isinstance(c, str) else "")
def test_integer_dtype_preserved(name, op, ref, inputs):
    """Integer tensors keep their dtype and values."""
    ints = [np.round(a * 10) for a in inputs]
    out = op(*[tp(a, dtype=torch.int32) for a in ints])
    for o in (out if isinstance(out, tuple) else (out,)):
        assert o.dtype is torch.int32
    expected = ref(*ints)
    check(out, list(expected) if isinstance(expected, (list, tuple)) else expected)


def test_stepped_inputs():
    """A stepped 1-D view (a diagonal, stride n+1) and a narrowed matrix behave like their values."""
    a = arr(4, 4)
    d = tp(a).diagonal()
    assert not d.is_contiguous()
    check(d.flip(0), np.diagonal(a)[::-1])
    check(torch.cat([d, d]), np.concatenate([np.diagonal(a)] * 2))
    check(d.reshape(2, 2), np.diagonal(a).reshape(2, 2))
    check(d.roll(1), np.roll(np.diagonal(a), 1))
    check(d.repeat(2), np.tile(np.diagonal(a), 2))
    m = tp(a).narrow(1, 1, 2)
    assert not m.is_contiguous()
    check(m.reshape(-1), a[:, 1:3].reshape(-1))
    check(m.t().contiguous(), a[:, 1:3].T)
    check(m.tril(), np.tril(a[:, 1:3]))
    check(torch.stack(list(m)), a[:, 1:3])


# -- seed 004 examples ---------------------------------------------------------------------------------
def test_seed_cat_stack():
    """torch.cat joins along an existing dim; torch.stack along a new one."""
    t = torch.ones((2, 3))
    t0 = torch.cat([t, t], dim=0)
    t1 = torch.cat([t, t, t], dim=1)
    assert t0.shape == (4, 3) and t1.shape == (2, 9)
    assert t0.tolist() == [[1.0] * 3] * 4
    s = torch.stack([t, t], dim=2)
    assert s.shape == (2, 3, 2)
    s0 = torch.stack([t, t, t], dim=0)
    assert s0.shape == (3, 2, 3)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_every_dim_promotion_and_gradients(dim):
    """stack equals np.stack along every new dim, promotes dtypes like cat, records StackBackward0,
    and its gradient (first and second order) is the slice of the output gradient per input."""
    rng = np.random.default_rng(3)
    a = torch.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    b = torch.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    c = torch.tensor(rng.integers(-5, 5, (2, 3)))
    r = torch.stack([a, b, c], dim)
    want = np.stack([a.detach().numpy(), b.detach().numpy(), c.numpy().astype(np.float64)], dim)
    assert r.dtype == torch.float64 and r.grad_fn.name() == "StackBackward0"
    assert np.array_equal(r.detach().numpy(), want)
    w = torch.tensor(rng.standard_normal(want.shape))
    (r * w).sum().backward()
    wn = np.moveaxis(w.numpy(), dim, 0)
    assert np.array_equal(a.grad.numpy(), wn[0]) and np.array_equal(b.grad.numpy(), wn[1])
    assert gradcheck(lambda x, y: torch.stack([x, y], dim), (a, b))
    assert gradgradcheck(lambda x, y: torch.stack([x, y], dim), (a, b))


def test_stack_zero_dim_and_errors():
    assert torch.stack([torch.tensor(1), torch.tensor(2.5)]).tolist() == [1.0, 2.5]
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2\] at entry 0 "
                                           r"and \[3\] at entry 1"):
        torch.stack([torch.ones(2), torch.ones(3)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.stack([torch.ones(2), torch.ones(2)], 2)


def test_seed_chunk_uneven_last():
    """torch.chunk: chunk size ceil(n / chunks), the last chunk smaller."""
    a = torch.ones((2, 7))
    chunks = torch.chunk(a, dim=1, chunks=3)
    assert [c.shape for c in chunks] == [(2, 3), (2, 3), (2, 1)]
    assert [c.shape[0] for c in torch.arange(7).chunk(3)] == [3, 3, 1]
    assert [c.tolist() for c in torch.arange(7).chunk(3)] == [[0, 1, 2], [3, 4, 5], [6]]


def test_seed_split_int_and_list():
    """torch.split with an int size (last piece smaller) and a list of sizes."""
    t = torch.ones((2, 5))
    assert [p.shape for p in torch.split(t, 2, dim=1)] == [(2, 2), (2, 2), (2, 1)]
    assert [p.shape for p in torch.split(t, [2, 1, 2], dim=1)] == [(2, 2), (2, 1), (2, 2)]
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 5"):
        torch.split(t, [2, 1], dim=1)


def test_seed_reshape_shares_memory_when_contiguous():
    """reshape of a contiguous tensor shares memory: a change through either is seen by the other."""
    t = torch.randperm(8)
    t_reshape = torch.reshape(t, (-1, 2, 2))
    assert t_reshape.shape == (2, 2, 2)
    first = t.select(0, 0)
    first.add_(1024 - first.item())                 # t[0] = 1024
    assert t.tolist()[0] == 1024 and t_reshape.tolist()[0][0][0] == 1024
    t_reshape.add_(1)
    assert t_reshape.reshape(-1).tolist() == t.tolist()
    assert t._version == t_reshape._version == 2


def test_seed_transpose_t_squeeze_unsqueeze():
    """transpose swaps two dims (c*h*w -> h*w*c with two swaps), t transposes a matrix,
    squeeze drops size-1 dims, unsqueeze adds one."""
    t = torch.rand((2, 3, 4))
    assert torch.transpose(t, dim0=1, dim1=2).shape == (2, 4, 3)
    assert t.transpose(0, 1).transpose(1, 2).shape == (3, 4, 2)
    m = torch.tensor([[1, 2, 3], [4, 5, 6]])
    assert torch.t(m).tolist() == [[1, 4], [2, 5], [3, 6]]
    s = torch.rand((1, 2, 3, 1))
    assert torch.squeeze(s).shape == (2, 3)
    assert torch.squeeze(s, dim=0).shape == (2, 3, 1)
    assert torch.squeeze(s, dim=1).shape == (1, 2, 3, 1)
    assert torch.unsqueeze(torch.rand(2, 3), dim=1).shape == (2, 1, 3)


def test_seed_cat_backward_gradient():
    """Seed 004: y0, y1 from w, x; backward through cat with gradient weights [1, 2] gives 9."""
    w = torch.tensor([1.], requires_grad=True)
    x = torch.tensor([2.], requires_grad=True)
    a = torch.add(w, x)
    b = torch.add(w, 1)
    y0 = torch.mul(a, b)
    y1 = torch.add(a, b)
    loss = torch.cat([y0, y1], dim=0)
    loss.backward(gradient=torch.tensor([1., 2.]))
    assert w.grad.tolist() == [9.0]


# -- views alias memory --------------------------------------------------------------------------------
VIEWS = [
    ("reshape", lambda b: b.reshape(4, 3)),
    ("view", lambda b: b.view(2, 6)),
    ("view_as", lambda b: b.view_as(torch.zeros(12))),
    ("flatten", lambda b: b.flatten()),
    ("ravel", lambda b: b.ravel()),
    ("unflatten", lambda b: b.unflatten(1, (2, 2))),
    ("transpose", lambda b: b.transpose(0, 1)),
    ("t", lambda b: b.t()),
    ("T", lambda b: b.T),
    ("mT", lambda b: b.mT),
    ("permute", lambda b: b.permute(1, 0)),
    ("movedim", lambda b: b.movedim(0, 1)),
    ("unsqueeze", lambda b: b.unsqueeze(0)),
    ("squeeze", lambda b: b.unsqueeze(1).squeeze()),
    ("narrow", lambda b: b.narrow(1, 1, 2)),
    ("select", lambda b: b.select(0, 1)),
    ("diagonal", lambda b: b.diagonal(1)),
    ("unbind", lambda b: b.unbind(1)[2]),
    ("split", lambda b: b.split(2, 1)[1]),
    ("chunk", lambda b: b.chunk(2, 0)[0]),
    ("tensor_split", lambda b: b.tensor_split(2, 1)[1]),
    ("atleast_3d", lambda b: torch.atleast_3d(b)),
    ("view_of_view", lambda b: b.t().narrow(0, 1, 2).select(1, 1)),
]


@pytest.mark.parametrize("name,make", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_writes_reach_base_and_share_version(name, make):
    """A write through a view changes the base; base and view share one version counter."""
    base = torch.zeros(3, 4)
    v = make(base)
    assert v._base is base
    before = base._version
    v.add_(1)
    assert base._version == v._version == before + 1
    assert float(base.sum()) == v.numel()
    base.mul_(3)
    assert v._version == base._version
    assert f64(v).min() == 3.0 and f64(v).max() == 3.0


def test_reads_through_views_follow_base():
    """Views see later writes to the base (expand, meshgrid and broadcast views included)."""
    base = torch.zeros(3, 1)
    e = base.expand(3, 4)
    g = torch.meshgrid(base.reshape(3), torch.zeros(2), indexing="ij")[0]
    bt = torch.broadcast_tensors(base, torch.zeros(4))[0]
    base.add_(2)
    assert f64(e).tolist() == [[2.0] * 4] * 3
    assert f64(g).tolist() == [[2.0] * 2] * 3
    assert f64(bt).shape == (3, 4) and f64(bt).min() == 2.0
    assert e._version == base._version == 1


@pytest.mark.parametrize("make", [
    lambda b: b.flip(0), lambda b: b.roll(1), lambda b: b.repeat(1, 1), lambda b: b.tile((1,)),
    lambda b: torch.cat([b]), lambda b: torch.stack([b])[0], lambda b: b.tril(), lambda b: b.triu(),
    lambda b: b.repeat_interleave(1, 0), lambda b: torch.diag(b), lambda b: b.t().contiguous(),
    lambda b: b.t().reshape(12), lambda b: torch.hstack([b]), lambda b: torch.diag_embed(b.select(0, 0)),
], ids=["flip", "roll", "repeat", "tile", "cat", "stack", "tril", "triu", "repeat_interleave", "diag",
        "contiguous_copy", "reshape_copy", "hstack", "diag_embed"])
def test_copies_do_not_alias(make):
    """Ops that copy (and reshape of a non-viewable layout) return independent storage."""
    base = torch.arange(12.).reshape(3, 4)
    out = make(base)
    snapshot = f64(out).copy()
    v = out._version
    base.add_(100)
    np.testing.assert_array_equal(f64(out), snapshot)
    assert out._version == v


def test_reshape_view_or_copy_by_layout():
    """reshape views when the strides allow (also for some non-contiguous inputs), else copies;
    view raises where reshape would copy."""
    x = torch.arange(24.).reshape(4, 6)
    assert x._base is not None
    rows = x.narrow(0, 1, 2)                       # non-contiguous rows of a contiguous tensor: viewable
    assert rows.is_contiguous()
    cols = x.narrow(1, 0, 3)                       # strides (6, 1): split of dim 0 is viewable
    assert not cols.is_contiguous()
    v = cols.reshape(2, 2, 3)
    assert v._base is x._base
    c = cols.reshape(12)
    assert c._base is None and c.is_contiguous()
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's size and stride"):
        cols.view(12)
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        x.t().view(-1)
    assert x.t().reshape(24)._base is None
    assert x.t().reshape(6, 4, 1)._base is x._base  # size-1 dims always fit
    assert x.t().view(6, 1, 4)._base is x._base
    e = torch.zeros(1, 4).expand(3, 4)
    assert e.view(3, 2, 2)._base is not None          # stride-0 dims can still be split
    assert e.reshape(12)._base is None


def test_contiguous_and_is_contiguous():
    """contiguous() returns self when already contiguous, else a contiguous copy."""
    x = torch.arange(6.).reshape(2, 3)
    assert x.is_contiguous() and x.contiguous() is x
    y = x.t()
    assert not y.is_contiguous()
    z = y.contiguous()
    assert z is not y and z.is_contiguous() and z._base is None
    np.testing.assert_array_equal(f64(z), f64(x).T)
    assert not x.expand(2, 2, 3).is_contiguous()
    assert torch.zeros(0, 3).t().is_contiguous()
    assert torch.tensor(1.).is_contiguous()
    assert torch.zeros(3, 1).t().is_contiguous()      # size-1 dims don't matter


def test_saved_view_modified_in_place_is_caught():
    """A view saved for backward shares its base's version counter: an in-place write to the base
    makes backward raise."""
    w = torch.ones(3, requires_grad=True)
    a = torch.zeros(2, 3)
    y = (w * a.select(0, 0)).sum()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_iteration_unbinds():
    """Iterating a tensor yields its rows (unbind(0) views)."""
    x = torch.arange(6).reshape(3, 2)
    rows = list(x)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    assert all(r._base is x._base for r in rows)
    with pytest.raises(TypeError):
        iter(torch.tensor(1.))


def test_diagonal_is_writable_view():
    """Writes through diagonal() (offsets, other dims, a transposed base) reach the base."""
    x = torch.zeros(3, 4)
    x.diagonal(1).add_(1)
    np.testing.assert_array_equal(f64(x), np.eye(3, 4, 1))
    y = torch.zeros(2, 3, 3)
    y.diagonal(0, 1, 2).add_(2)
    np.testing.assert_array_equal(f64(y), np.broadcast_to(2 * np.eye(3), (2, 3, 3)))
    base = torch.zeros(3, 4, 2)
    z = base.permute(2, 0, 1)                         # non-contiguous, yet its (3, 4) planes merge
    assert not z.is_contiguous()
    z.diagonal(1, 1, 2).add_(1)
    np.testing.assert_array_equal(f64(base), np.broadcast_to(np.eye(3, 4, 1)[..., None], (3, 4, 2)))
    w = torch.zeros(4, 3)
    d = w.t().diagonal(-1)                            # planes that can't merge: the "diagonal" kernel's view
    w.add_(torch.arange(12.).reshape(4, 3))
    np.testing.assert_array_equal(f64(d), np.diagonal(np.arange(12.).reshape(4, 3).T, -1))
    assert d._version == w._version


def test_select_of_vector_is_a_0d_view():
    """Selecting every dim still gives a view (0-d), and writes through it reach the base."""
    x = torch.zeros(3)
    e = x.select(0, 1)
    assert e.shape == () and e._base is x
    e.add_(5)
    assert x.tolist() == [0.0, 5.0, 0.0]
    s = torch.zeros(1, 1).squeeze()
    s.add_(1)
    assert s._base.tolist() == [[1.0]]


def test_tril_triu_in_place():
    x = torch.arange(1., 10.).reshape(3, 3)
    assert x.tril_(-1) is x
    np.testing.assert_array_equal(f64(x), np.tril(np.arange(1., 10.).reshape(3, 3), -1))
    y = torch.arange(1., 10.).reshape(3, 3)
    y.triu_()
    np.testing.assert_array_equal(f64(y), np.triu(np.arange(1., 10.).reshape(3, 3)))
    assert y._version == 1


# -- dtypes, out= ---------------------------------------------------------------------------------------
def test_cat_promotes_dtypes():
    """cat promotes like torch.cat; legacy (0,) tensors still take part in the dtype."""
    i = torch.tensor([1, 2])
    f = torch.tensor([0.5], dtype=torch.float32)
    b = torch.tensor([True])
    assert torch.cat([i, f]).dtype is torch.float32
    assert torch.cat([i, f]).tolist() == [1.0, 2.0, 0.5]
    assert torch.cat([b, i.to(torch.uint8)]).dtype is torch.uint8
    assert torch.cat([torch.zeros(0, dtype=torch.float64), torch.ones(2, 2, dtype=torch.int32)]).dtype \
        is torch.float64
    assert torch.stack([i, torch.tensor([1., 2.])]).dtype is torch.float32
    e = torch.cat([torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int32)])
    assert e.shape == (0,) and e.dtype is torch.int64


def test_cat_gradient_casts_to_each_input_dtype():
    a = torch.ones(2, dtype=torch.float32, requires_grad=True)
    b = torch.ones(3, dtype=torch.float64, requires_grad=True)
    out = torch.cat([a, b])
    assert out.dtype is torch.float64
    (out * torch.arange(5.).double()).sum().backward()
    assert a.grad.dtype is torch.float32 and a.grad.tolist() == [0.0, 1.0]
    assert b.grad.dtype is torch.float64 and b.grad.tolist() == [2.0, 3.0, 4.0]


def test_cat_out():
    out = torch.zeros(1)
    r = torch.cat([torch.ones(2, 2), torch.zeros(1, 2)], out=out)
    assert r is out and out.shape == (3, 2) and float(out.sum()) == 4.0
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.cat([torch.ones(2)], out=torch.ones(2, requires_grad=True))


def test_tril_bool_and_int():
    m = torch.ones(3, 3, dtype=torch.bool).tril()
    assert m.dtype is torch.bool and m.tolist() == np.tril(np.ones((3, 3), bool)).tolist()
    assert torch.arange(4).reshape(2, 2).triu(1).tolist() == [[0, 1], [0, 0]]


def test_repeat_interleave_counts_only():
    """repeat_interleave(counts): indices 0..n-1 repeated by counts."""
    assert torch.repeat_interleave(torch.tensor([1, 0, 2])).tolist() == [0, 2, 2]
    assert torch.tensor(3.).repeat_interleave(2).tolist() == [3.0, 3.0]


# -- errors -----------------------------------------------------------------------------------------------
ERRORS = [
    (lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 4)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 "
     "in the list."),
    (lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 3), torch.ones(3, 4)], dim=1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 2 "
     "in the list."),
    (lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 3, 1)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 3"),
    (lambda: torch.cat([torch.ones(()), torch.ones(2)]), RuntimeError,
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    (lambda: torch.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda: torch.cat([torch.ones(2, 3)], dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: torch.cat(torch.ones(2)), TypeError, "must be tuple of Tensors"),
    (lambda: torch.cat([torch.ones(2), 3]), TypeError, "expected Tensor as element 1"),
    (lambda: torch.stack([torch.ones(2, 3), torch.ones(2, 4)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1"),
    (lambda: torch.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: torch.stack([torch.ones(2)], 2), IndexError, "Dimension out of range"),
    (lambda: torch.ones(2, 3).reshape(4, -1), RuntimeError, "shape '[4, -1]' is invalid for input of size 6"),
    (lambda: torch.ones(2, 3).view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: torch.ones(2, 3).view(5), RuntimeError, "shape '[5]' is invalid for input of size 6"),
    (lambda: torch.ones(2, 3).expand(3, 3), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0"),
    (lambda: torch.ones(2, 3).expand(3), RuntimeError,
     "the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"),
    (lambda: torch.ones(2).expand(-1, 2), RuntimeError,
     "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
    (lambda: torch.broadcast_tensors(torch.ones(2), torch.ones(3)), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: torch.ones(2, 3).permute(0, 0), RuntimeError, "duplicate dims are not allowed"),
    (lambda: torch.ones(2, 3).permute(0), RuntimeError, "input.dim() = 2 is not equal to len(dims) = 1"),
    (lambda: torch.ones(2, 3).transpose(0, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: torch.ones(2, 3, 4).t(), RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda: torch.ones(3).mT, RuntimeError, "tensor.mT is only supported on matrices or batches of matrices. "
                                              "Got 1-D tensor."),
    (lambda: torch.ones(2, 3).movedim((0, 1), (1, 1)), RuntimeError, "movedim: repeated dim in `destination`"),
    (lambda: torch.ones(2, 3).movedim((0, 1), 1), RuntimeError, "should contain the same number of dims"),
    (lambda: torch.ones(2, 3).squeeze(2), IndexError, "Dimension out of range"),
    (lambda: torch.ones(1, 3).squeeze((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: torch.ones(2, 3).unsqueeze(3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda: torch.ones(2, 3, 4).flatten(2, 1), RuntimeError, "start_dim cannot come after end_dim"),
    (lambda: torch.ones(2, 3).unflatten(1, (2, 2)), RuntimeError,
     "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input tensor"),
    (lambda: torch.ones(2, 3).narrow(1, 2, 2), RuntimeError, "start (2) + length (2) exceeds dimension size (3)."),
    (lambda: torch.ones(2, 3).narrow(1, 4, 0), IndexError,
     "start out of range (expected to be in range of [-3, 3], but got 4)"),
    (lambda: torch.ones(2, 3).narrow(1, 0, -1), RuntimeError, "narrow(): length must be non-negative."),
    (lambda: torch.ones(2, 3).select(0, 2), IndexError,
     "select(): index 2 out of range for tensor of size [2, 3] at dimension 0"),
    (lambda: torch.ones(()).select(0, 0), IndexError, "select() cannot be applied to a 0-dim tensor."),
    (lambda: torch.ones(()).unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: torch.ones(7).chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda: torch.ones(3).split(0), RuntimeError, "split_size can only be 0 if dimension size is 0"),
    (lambda: torch.ones(3).split([1, -1, 3]), RuntimeError, "non-negative entries"),
    (lambda: torch.ones(3).tensor_split(0), RuntimeError, "number of sections must be larger than 0, got 0"),
    (lambda: torch.hsplit(torch.ones(6), 4), RuntimeError,
     "torch.hsplit attempted to split along dimension 0, but the size of the dimension 6 is not divisible by "
     "the split_size 4!"),
    (lambda: torch.vsplit(torch.ones(6), 2), RuntimeError,
     "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 dimensions!"),
    (lambda: torch.ones(2, 3).flip(0, 0), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: torch.ones(3).fliplr(), RuntimeError, "Input must be >= 2-d."),
    (lambda: torch.ones(()).flipud(), RuntimeError, "Input must be >= 1-d."),
    (lambda: torch.ones(2, 3).roll((1, 2), (0,)), RuntimeError, "shifts and dimensions must align. shifts: 2, "
                                                                 "dims:1"),
    (lambda: torch.ones(2, 3).roll((1, 2)), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:0"),
    (lambda: torch.ones(2, 3).roll(1, 2), IndexError, "Dimension out of range"),
    (lambda: torch.ones(2, 3).repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    (lambda: torch.ones(2, 3).repeat(1, -1), RuntimeError, "Trying to create tensor with negative dimension -3"),
    (lambda: torch.ones(2, 3).repeat_interleave(-1, 0), RuntimeError, "Repeats must be non-negative"),
    (lambda: torch.ones(2, 2).repeat_interleave(torch.tensor([1, 2, 3]), dim=0), RuntimeError,
     "repeats must have the same size as input along dim, but got repeats.size(0) = 3 and input.size(0) = 2"),
    (lambda: torch.ones(2, 3).diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
    (lambda: torch.ones(3).diagonal(), IndexError, "Dimension out of range"),
    (lambda: torch.diag(torch.ones(2, 2, 2)), RuntimeError, "diag(): Supports 1D or 2D tensors. Got 3D"),
    (lambda: torch.ones(3).tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda: torch.ones(3).triu(), RuntimeError, "triu: input tensor must have at least 2 dimensions"),
    (lambda: torch.meshgrid(torch.ones(2, 2)), RuntimeError, "Expected 0D or 1D tensor in the tensor list"),
    (lambda: torch.meshgrid(torch.ones(2), torch.ones(2), indexing="xx"), RuntimeError,
     'indexing must be one of "xy" or "ij", but received: xx'),
    (lambda: torch.meshgrid(torch.ones(2), torch.ones(2, dtype=torch.float64)), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors(fn, exc, msg):
    """PyTorch's error types and messages (naming shapes, dims and sizes)."""
    with pytest.raises(exc) as e:
        fn()
    assert msg in str(e.value)


# -- gradients -----------------------------------------------------------------------------------------------
GRADS = [
    ("reshape", lambda a: a.reshape(3, 2), lambda: (r(2, 3),)),
    ("reshape_copy", lambda a: a.reshape(6), lambda: (nc(2, 3),)),
    ("view", lambda a: a.view(6, 1), lambda: (r(2, 3),)),
    ("view_as", lambda a: a.view_as(torch.zeros(3, 2)), lambda: (r(6),)),
    ("flatten", lambda a: a.flatten(1), lambda: (nc(2, 2, 2),)),
    ("unflatten", lambda a: a.unflatten(0, (2, 2)), lambda: (r(4, 2),)),
    ("ravel", torch.ravel, lambda: (nc(2, 3),)),
    ("expand", lambda a: a.expand(2, 3, 2), lambda: (r(3, 1),)),
    ("broadcast_to", lambda a: torch.broadcast_to(a, (2, 3)), lambda: (r(3),)),
    ("broadcast_tensors", lambda a, b: torch.broadcast_tensors(a, b), lambda: (r(2, 1), r(3))),
    ("permute", lambda a: a.permute(2, 0, 1), lambda: (r(2, 3, 2),)),
    ("transpose", lambda a: a.transpose(0, 2), lambda: (r(2, 1, 3),)),
    ("t", torch.t, lambda: (nc(2, 3),)),
    ("T", lambda a: a.T, lambda: (r(2, 1, 3),)),
    ("mT", lambda a: a.mT, lambda: (r(2, 2, 3),)),
    ("movedim", lambda a: a.movedim((0, 2), (1, 0)), lambda: (r(2, 3, 2),)),
    ("squeeze", lambda a: a.squeeze(), lambda: (r(1, 3, 1),)),
    ("squeeze_dim", lambda a: a.squeeze((0, 1)), lambda: (r(1, 3, 1),)),
    ("unsqueeze", lambda a: a.unsqueeze(-1), lambda: (nc(2, 3),)),
    ("contiguous", lambda a: a.contiguous(), lambda: (nc(2, 3),)),
    ("cat", lambda a, b, c: torch.cat([a, b, c], 1), lambda: (r(2, 2), nc(2, 3), r(2, 0))),
    ("cat_legacy_empty", lambda a, b: torch.cat([b, a]), lambda: (r(3, 2), r(0))),
    ("stack", lambda a, b: torch.stack([a, b], 1), lambda: (r(2, 3), nc(2, 3))),
    ("hstack", lambda a, b: torch.hstack([a, b]), lambda: (r(2), r(3))),
    ("vstack", lambda a, b: torch.vstack([a, b]), lambda: (r(3), r(2, 3))),
    ("dstack", lambda a, b: torch.dstack([a, b]), lambda: (r(2, 2), r(2, 2))),
    ("column_stack", lambda a, b: torch.column_stack([a, b]), lambda: (r(3), r(3, 2))),
    ("chunk", lambda a: a.chunk(3), lambda: (r(7),)),
    ("split_int", lambda a: a.split(2, 1), lambda: (r(2, 5),)),
    ("split_list", lambda a: torch.split(a, [1, 0, 2]), lambda: (nc(3, 2),)),
    ("tensor_split", lambda a: a.tensor_split([1, 3]), lambda: (r(5),)),
    ("unbind", lambda a: a.unbind(1), lambda: (r(2, 3),)),
    ("narrow", lambda a: a.narrow(1, 1, 2), lambda: (nc(2, 4),)),
    ("select", lambda a: a.select(0, -1), lambda: (r(3, 2),)),
    ("diagonal", lambda a: a.diagonal(1), lambda: (r(3, 4),)),
    ("diagonal_3d", lambda a: a.diagonal(-1, 2, 0), lambda: (nc(3, 2, 3),)),
    ("diag_1d", lambda a: torch.diag(a, 1), lambda: (r(3),)),
    ("diag_2d", lambda a: torch.diag(a, -1), lambda: (r(3, 3),)),
    ("diag_embed", lambda a: torch.diag_embed(a, -1, 0, 2), lambda: (r(2, 2),)),
    ("tril", lambda a: a.tril(), lambda: (r(3, 3),)),
    ("triu", lambda a: torch.triu(a, 1), lambda: (nc(2, 3, 3),)),
    ("flip", lambda a: a.flip(0, 1), lambda: (r(2, 3),)),
    ("fliplr", torch.fliplr, lambda: (nc(2, 3),)),
    ("flipud", torch.flipud, lambda: (r(3, 2),)),
    ("roll", lambda a: a.roll((1, -1), (0, 1)), lambda: (r(2, 3),)),
    ("roll_flat", lambda a: a.roll(4), lambda: (nc(2, 3),)),
    ("repeat", lambda a: a.repeat(2, 1, 2), lambda: (r(2, 2),)),
    ("tile", lambda a: torch.tile(a, (2,)), lambda: (r(3),)),
    ("repeat_interleave", lambda a: a.repeat_interleave(2, dim=1), lambda: (r(2, 2),)),
    ("repeat_interleave_t", lambda a: a.repeat_interleave(torch.tensor([2, 0, 1])), lambda: (r(3),)),
    ("meshgrid", lambda a, b: torch.meshgrid(a, b, indexing="xy"), lambda: (r(2), r(3))),
    ("atleast_3d", lambda a: torch.atleast_3d(a), lambda: (r(3),)),
    ("chain", lambda a: torch.cat(a.t().chunk(2, 1), 0).flip(0).roll(1, 1).tril().diagonal(),
     lambda: (r(2, 4),)),
]


@pytest.mark.parametrize("name,fn,make", GRADS, ids=[g[0] for g in GRADS])
def test_gradcheck_and_gradgradcheck(name, fn, make):
    """First and second derivatives (through create_graph=True) match finite differences."""
    inputs = make()
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_view_backward_reaches_base_leaf():
    """Gradients through views accumulate into the leaf; split's pieces share one node (as in PyTorch:
    SplitBackward0, outputs 0, 1, 2), which fills the piece that got no gradient with zeros."""
    x = torch.arange(6.).requires_grad_()
    a, b, c = x.split(2)
    assert a.grad_fn is b.grad_fn is c.grad_fn and a.grad_fn.name() == "SplitBackward0"
    assert [t.output_nr for t in (a, b, c)] == [0, 1, 2]
    assert x.split([2, 4])[1].grad_fn.name() == "SplitWithSizesBackward0"
    (a * 1 + c * 3).sum().backward()
    assert x.grad.tolist() == [1, 1, 0, 0, 3, 3]
    y = torch.ones(2, 3, requires_grad=True)
    (y.t().reshape(6) * torch.arange(6.)).sum().backward()
    assert y.grad.tolist() == [[0, 2, 4], [1, 3, 5]]


def test_no_graph_without_grad():
    x = torch.ones(2, 3)
    assert x.reshape(3, 2).grad_fn is None and torch.cat([x, x]).grad_fn is None
    w = torch.ones(2, 3, requires_grad=True)
    with torch.no_grad():
        assert w.t().grad_fn is None and not torch.cat([w, w]).requires_grad
    assert torch.cat([x, w]).grad_fn.name() == "CatBackward0"


def test_every_shape_backward_is_covered():
    """Every "XxxBackward0" node name in core/ops/shape.py is produced by some case of GRADS."""
    import pathlib
    import re
    src = (pathlib.Path(torch.__file__).parent / "ops" / "shape.py").read_text()
    declared = set(re.findall(r'"([A-Z][A-Za-z0-9]*Backward\d+)"', src))
    produced = set()
    for _, fn, make in GRADS:
        out = fn(*make())
        stack = [o.grad_fn for o in (out if isinstance(out, tuple) else (out,)) if o.grad_fn is not None]
        while stack:
            node = stack.pop()
            produced.add(node.name())
            stack.extend(e[0] for e in node.edges if e is not None)
    produced |= {torch.ones(2, requires_grad=True).reshape(2).grad_fn.name()}
    assert declared <= produced, sorted(declared - produced)


def test_reshape_views_really_alias():
    """Random permuted/narrowed inputs: whenever reshape returns a view, writes through it reach the
    input (the frontend's stride rule agrees with the backend's reshape); values always match NumPy."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.integers(1, 4, size=nd))
        base = torch.arange(float(np.prod(shape))).reshape(shape)
        x = base.permute(*rng.permutation(nd).tolist())
        d = int(rng.integers(0, nd))
        if x.shape[d] > 1:
            length = 1 if rng.random() < 0.5 else x.shape[d] - 1
            x = x.narrow(d, int(rng.integers(0, x.shape[d] - length + 1)), length)
        ref = f64(x)
        flat = ref.reshape(-1)
        # a random factorisation of numel (with 1s sprinkled in)
        n, target = flat.size, []
        while n > 1:
            f = [k for k in range(2, n + 1) if n % k == 0][int(rng.integers(0, 2)) if n > 3 else 0]
            target.append(f)
            n //= f
            if rng.random() < 0.3:
                target.append(1)
        target = tuple(target) or (1,)
        out = x.reshape(target)
        np.testing.assert_array_equal(f64(out), flat.reshape(target))
        if out._base is not None:
            out.add_(1)
            np.testing.assert_array_equal(f64(x), ref + 1)
            np.testing.assert_array_equal(f64(x.view(target)), flat.reshape(target) + 1)
        else:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                x.view(target)


def test_unfold_matches_numpy_sliding_windows():
    from numpy.lib.stride_tricks import sliding_window_view
    a = np.arange(2 * 9 * 3, dtype=np.float64).reshape(2, 9, 3)
    got = torch.tensor(a).unfold(1, 4, 2)
    want = sliding_window_view(a, 4, axis=1)[:, ::2]           # (2, 3, 3, 4): windows, then window elements
    assert got.shape == want.shape and np.array_equal(got.numpy(), want)
    assert torch.arange(7.0).unfold(0, 0, 1).shape == (8, 0)
    assert torch.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 7 but size is 8"):
        torch.arange(7.0).unfold(0, 8, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        torch.arange(7.0).unfold(0, 2, 0)


def test_sum_to_size_and_narrow_copy():
    a = torch.arange(6.0).reshape(2, 3)
    assert a.sum_to_size(1, 3).tolist() == [[3.0, 5.0, 7.0]] and a.sum_to_size(2, 1).tolist() == [[3.0], [12.0]]
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        a.sum_to_size(2, 2)
    c = torch.narrow_copy(a, 1, 1, 2)
    c.fill_(0)
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and c.shape == (2, 2)


@pytest.mark.parametrize("shape,wrap", [((7, 3), True), ((7, 3), False), ((2, 5), False), ((4, 4), False),
                                        ((3, 3, 3), False)])
def test_fill_diagonal_matches_numpy(shape, wrap):
    a = np.zeros(shape)
    np.fill_diagonal(a, 5.0, wrap=wrap)
    t = torch.zeros(*shape, dtype=torch.float64)
    assert t.fill_diagonal_(5.0, wrap=wrap) is t and np.array_equal(t.numpy(), a)


def test_fill_diagonal_errors():
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        torch.zeros(2, 3, 4).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        torch.zeros(3).fill_diagonal_(1)
