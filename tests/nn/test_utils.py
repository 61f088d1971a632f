"""nn.utils: weight_norm / remove_weight_norm, gradient clipping, parameters <-> vector, and the
packed-sequence helpers of nn.utils.rnn."""
import math

import numpy as np
import pytest

import tensorplug as torch
from tensorplug import nn
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.nn.utils import (clip_grad_norm_, clip_grad_value_, parameters_to_vector, remove_weight_norm,
                                 vector_to_parameters, weight_norm)
from tensorplug.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence,
                                     pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# -- weight_norm ------------------------------------------------------------------------------------
def test_weight_norm_parameters_and_forward():
    lin = nn.Linear(4, 3).double()
    w0 = lin.weight.detach().numpy().copy()
    x = torch.randn(5, 4, dtype=torch.float64)
    y0 = lin(x).detach().numpy()
    assert weight_norm(lin) is lin
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert lin.weight_g.shape == (3, 1) and lin.weight_v.shape == (3, 4)
    assert np.allclose(lin.weight_g.detach().numpy()[:, 0], np.linalg.norm(w0, axis=1))
    assert np.allclose(lin.weight.detach().numpy(), w0)            # same weight at wrap time
    assert np.allclose(lin(x).detach().numpy(), y0)
    assert "weight" not in lin._parameters and "weight" not in lin.state_dict()
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        weight_norm(lin)


def test_weight_norm_gradients_flow_to_g_and_v():
    lin = weight_norm(nn.Linear(3, 2).double())
    x = torch.randn(4, 3, dtype=torch.float64)
    lin(x).sum().backward()
    assert lin.weight_g.grad is not None and lin.weight_v.grad is not None
    assert lin.weight_g.grad.abs().sum().item() > 0
    g, v, b = lin.weight_g, lin.weight_v, lin.bias

    def reparam(g, v, b, x):
        w = v * (g / (v * v).sum(1, keepdim=True).sqrt())
        return torch.nn.functional.linear(x, w, b)
    xg = x.clone().requires_grad_()
    assert gradcheck(reparam, (g, v, b, xg))
    assert gradgradcheck(reparam, (g, v, b, xg))

    # the module's own forward recomputes the weight from g and v on every call
    w = (v * (g / (v * v).sum(1, keepdim=True).sqrt())).detach()
    assert np.allclose(lin(x).detach().numpy(), x.numpy() @ w.numpy().T + b.detach().numpy())
    # gradient w.r.t. g equals the analytic one: dL/dg_i = sum_j dL/dw_ij v_ij / ||v_i||
    lin.zero_grad()
    gy = torch.randn(4, 2, dtype=torch.float64)
    lin(x).backward(gy)
    dw = gy.numpy().T @ x.numpy()
    vv = v.detach().numpy()
    nv = np.linalg.norm(vv, axis=1, keepdims=True)
    gg = g.detach().numpy()
    assert np.allclose(lin.weight_g.grad.numpy(), (dw * vv / nv).sum(1, keepdims=True))
    expected_v = gg / nv * dw - gg * vv * (dw * vv).sum(1, keepdims=True) / nv ** 3
    assert np.allclose(lin.weight_v.grad.numpy(), expected_v)


def test_weight_norm_dims():
    lin = nn.Linear(4, 3)
    w0 = lin.weight.detach().numpy().copy()
    weight_norm(lin, dim=1)
    assert lin.weight_g.shape == (1, 4)
    assert np.allclose(lin.weight_g.detach().numpy()[0], np.linalg.norm(w0, axis=0), rtol=1e-5)
    lin2 = nn.Linear(4, 3)
    weight_norm(lin2, dim=None)
    assert lin2.weight_g.shape == ()
    assert math.isclose(lin2.weight_g.item(), np.linalg.norm(lin2.weight_v.detach().numpy()), rel_tol=1e-5)
    lin3 = weight_norm(nn.Linear(4, 3), name="bias")                # 1-d: norm per element
    assert np.allclose(lin3.bias_g.detach().numpy(), np.abs(lin3.bias_v.detach().numpy()))


def test_remove_weight_norm():
    lin = weight_norm(nn.Linear(4, 3))
    with torch.no_grad():
        lin.weight_g.mul_(2.0)
    lin(torch.randn(1, 4))
    w = lin.weight.detach().numpy().copy()
    assert remove_weight_norm(lin) is lin
    assert isinstance(lin.weight, nn.Parameter)
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]
    assert np.allclose(lin.weight.detach().numpy(), w)
    assert not lin._forward_pre_hooks
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        remove_weight_norm(lin)


def test_weight_norm_state_dict_round_trip():
    a, b = weight_norm(nn.Linear(3, 3)), weight_norm(nn.Linear(3, 3))
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 3)
    assert np.allclose(a(x).detach().numpy(), b(x).detach().numpy())


# -- clipping --------------------------------------------------------------------------------------
def _params_with_grads(grads):
    ps = []
    for g in grads:
        p = nn.Parameter(torch.zeros(*g.shape, dtype=torch.float64))
        p.grad = torch.tensor(g, dtype=torch.float64)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_clip_grad_norm_matches_numpy(norm_type):
    rng = np.random.default_rng(0)
    grads = [rng.normal(size=(3, 4)), rng.normal(size=5), rng.normal(size=(2, 2, 2))]
    ps = _params_with_grads(grads)
    ps.append(nn.Parameter(torch.zeros(2)))                       # no grad: ignored
    flat = np.concatenate([g.ravel() for g in grads])
    total = np.abs(flat).max() if math.isinf(norm_type) else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    max_norm = 0.5
    out = clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    assert out.ndim == 0 and math.isclose(out.item(), total, rel_tol=1e-10)
    coef = min(1.0, max_norm / (total + 1e-6))
    for p, g in zip(ps, grads):
        assert np.allclose(p.grad.numpy(), g * coef, rtol=1e-10)
    new_flat = np.concatenate([p.grad.numpy().ravel() for p in ps[:3]])
    new_norm = np.abs(new_flat).max() if math.isinf(norm_type) else \
        (np.abs(new_flat) ** norm_type).sum() ** (1 / norm_type)
    assert new_norm <= max_norm + 1e-6


def test_clip_grad_norm_float32_strided_and_mixed_dtypes():
    """One dtype's gradients (the kernel-level sum of squares), a transposed gradient among them, and a
    float64 one mixed in (the per-tensor norms): the float64 total norm, in the gradients' dtype."""
    rng = np.random.default_rng(1)
    grads = [rng.normal(size=(30, 7)), rng.normal(size=(5, 9)).T, rng.normal(size=3) * 1e3]
    total = math.sqrt(sum((g ** 2).sum() for g in grads))
    for dtypes in (("float32",) * 3, ("float32", "float32", "float64")):
        ps = []
        for g, dt in zip(grads, dtypes):
            p = nn.Parameter(torch.zeros(*g.shape, dtype=getattr(torch, dt)))
            p.grad = torch.tensor(g.T, dtype=p.dtype).t() if g.shape == (9, 5) else torch.tensor(g, dtype=p.dtype)
            ps.append(p)
        assert not ps[1].grad.is_contiguous()
        out = clip_grad_norm_(ps, 2.0)
        assert out.dtype == (torch.float32 if len(set(dtypes)) == 1 else torch.float64)
        assert math.isclose(out.item(), total, rel_tol=1e-6)
        for p, g in zip(ps, grads):
            np.testing.assert_allclose(p.grad.numpy(), g * (2.0 / (total + 1e-6)), rtol=1e-6, atol=1e-9)
    nan = [nn.Parameter(torch.zeros(2))]
    nan[0].grad = torch.tensor([np.nan, 1.0], dtype=torch.float32)
    assert math.isnan(clip_grad_norm_(nan, 1.0).item())


def test_clip_grad_norm_no_clip_single_tensor_and_empty():
    ps = _params_with_grads([np.array([0.3, 0.4])])
    out = clip_grad_norm_(ps[0], max_norm=10)                      # a single tensor is accepted
    assert math.isclose(out.item(), 0.5, rel_tol=1e-12)
    assert np.allclose(ps[0].grad.numpy(), [0.3, 0.4])
    assert clip_grad_norm_([nn.Parameter(torch.zeros(1))], 1.0).item() == 0.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")      # inf * 0 in the backend
def test_clip_grad_norm_nonfinite():
    ps = _params_with_grads([np.array([np.inf, 1.0])])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(ps, 1.0)
    assert math.isinf(total.item())


def test_clip_grad_norm_on_model():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    (model(torch.randn(8, 3)) * 100).sum().backward()
    total = clip_grad_norm_(model.parameters(), 1.0)
    assert total.item() > 1.0
    after = math.sqrt(sum((p.grad.double() ** 2).sum().item() for p in model.parameters()))
    assert abs(after - 1.0) < 1e-4


def test_clip_grad_value():
    ps = _params_with_grads([np.array([-3.0, 0.5, 2.0]), np.array([[0.1, -0.2]])])
    assert clip_grad_value_(ps, 1.0) is None
    assert np.array_equal(ps[0].grad.numpy(), [-1.0, 0.5, 1.0])
    assert np.array_equal(ps[1].grad.numpy(), [[0.1, -0.2]])


# -- parameters <-> vector --------------------------------------------------------------------------
def test_parameters_to_vector_round_trip():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1, bias=False))
    vec = parameters_to_vector(model.parameters())
    expected = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    assert vec.shape == (6 + 2 + 2,) and np.array_equal(vec.detach().numpy(), expected)
    vec.sum().backward()                                           # differentiable
    assert all(np.all(p.grad.numpy() == 1) for p in model.parameters())
    new = torch.arange(10, dtype=torch.float32)
    vector_to_parameters(new, model.parameters())
    assert np.array_equal(model[0].weight.detach().numpy(), np.arange(6).reshape(2, 3))
    assert np.array_equal(model[0].bias.detach().numpy(), [6, 7])
    assert np.array_equal(model[1].weight.detach().numpy(), [[8, 9]])
    assert isinstance(model[0].weight, nn.Parameter)
    assert np.array_equal(parameters_to_vector(model.parameters()).detach().numpy(), np.arange(10))
    with pytest.raises(TypeError, match="expected tensorplug.Tensor"):
        vector_to_parameters([1.0], model.parameters())


# -- rnn helpers ----------------------------------------------------------------------------------
def _seqs():
    rng = np.random.default_rng(0)
    return [torch.tensor(rng.normal(size=(n, 2)), dtype=torch.float64) for n in (2, 4, 3)]


def test_pad_sequence():
    seqs = _seqs()
    p = pad_sequence(seqs)
    assert p.shape == (4, 3, 2)
    for i, s in enumerate(seqs):
        n = s.shape[0]
        assert np.array_equal(p[:n, i].numpy(), s.numpy()) and np.all(p[n:, i].numpy() == 0)
    pb = pad_sequence(seqs, batch_first=True, padding_value=-1.0)
    assert pb.shape == (3, 4, 2) and np.all(pb[0, 2:].numpy() == -1)
    pl = pad_sequence(seqs, batch_first=True, padding_side="left")
    assert np.array_equal(pl[0, 2:].numpy(), seqs[0].numpy()) and np.all(pl[0, :2].numpy() == 0)
    assert [u.shape[0] for u in unpad_sequence(p, [2, 4, 3])] == [2, 4, 3]


def test_pack_pad_round_trip_unsorted():
    seqs = _seqs()
    padded = pad_sequence(seqs, batch_first=True)
    packed = pack_padded_sequence(padded, torch.tensor([2, 4, 3]), batch_first=True, enforce_sorted=False)
    assert isinstance(packed, PackedSequence)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1] and packed.batch_sizes.dtype == torch.int64
    assert packed.sorted_indices.tolist() == [1, 2, 0] and packed.unsorted_indices.tolist() == [2, 0, 1]
    # time-major interleaving of the sorted batch
    order = [seqs[1], seqs[2], seqs[0]]
    expected = np.concatenate([np.stack([s.numpy()[t] for s in order if s.shape[0] > t]) for t in range(4)])
    assert np.array_equal(packed.data.numpy(), expected)
    out, lengths = pad_packed_sequence(packed, batch_first=True)
    assert np.array_equal(out.numpy(), padded.numpy()) and lengths.tolist() == [2, 4, 3]
    out2, _ = pad_packed_sequence(packed, total_length=6, padding_value=9.0)
    assert out2.shape == (6, 3, 2) and np.all(out2[4:].numpy() == 9.0)
    assert np.all(out2[2:, 0].numpy() == 9.0)
    with pytest.raises(ValueError, match="total_length"):
        pad_packed_sequence(packed, total_length=2)


def test_pack_sorted_and_sequence_helpers():
    seqs = _seqs()
    srt = [seqs[1], seqs[2], seqs[0]]
    packed = pack_sequence(srt)
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    out, lengths = pad_packed_sequence(packed)
    assert lengths.tolist() == [4, 3, 2] and out.shape == (4, 3, 2)
    back = unpack_sequence(pack_sequence(seqs, enforce_sorted=False))
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(back, seqs))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_sequence(seqs)
    with pytest.raises(RuntimeError, match="greater than 0"):
        pack_padded_sequence(pad_sequence(seqs), [2, 0, 3], enforce_sorted=False)
    with pytest.raises(RuntimeError, match="equal to batch_size"):
        pack_padded_sequence(pad_sequence(seqs), [4, 3])


def test_pack_gradients_flow():
    seqs = [s.clone().requires_grad_() for s in _seqs()]
    packed = pack_sequence(seqs, enforce_sorted=False)
    out, _ = pad_packed_sequence(packed)
    (out * 2).sum().backward()
    assert all(np.all(s.grad.numpy() == 2) for s in seqs)
    x = torch.randn(3, 2, 2, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: pad_packed_sequence(pack_padded_sequence(t, [3, 1]))[0], (x,))


def test_packed_sequence_to_and_invert_permutation():
    packed = pack_sequence(_seqs(), enforce_sorted=False)
    f = packed.float()
    assert f.data.dtype == torch.float32 and f.batch_sizes is packed.batch_sizes
    assert f.sorted_indices.tolist() == packed.sorted_indices.tolist()
    assert packed.to(torch.float64) is packed
    assert not packed.is_cuda
    assert invert_permutation(torch.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert invert_permutation(None) is None
    data, bs, si, ui = packed                                          # a namedtuple
    assert bs is packed.batch_sizes
