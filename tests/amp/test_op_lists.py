"""The dtype every listed op family produces under autocast, per device type, as PyTorch 2.13 does.

Policies (PyTorch's behaviour, checked op by op against PyTorch 2.13 on the CPU):
L  runs in the autocast dtype: float32 inputs -> low precision, low-precision inputs stay;
F  runs in float32: float32 inputs stay, low-precision inputs -> float32;
N  not autocast: the result keeps the inputs' dtype.
float64 inputs are never cast (every op returns float64 for float64 inputs).
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn.functional as F

torch.ops.load_lazy()


def _gen(seed=0):
    return np.random.default_rng(seed)


def r(*s, dt=torch.float32, device="cpu", lo=0.0):
    return torch.tensor(_gen(sum(s)).random(s) + lo, dtype=torch.float32, device=device).to(dt)


def m(*s, dt=torch.float32, device="cpu"):
    return r(*s, dt=dt, device=device, lo=0.5)


def _long(v, device="cpu"):
    return torch.tensor(v, dtype=torch.int64, device=device)


def _eye(n, dt, device="cpu"):
    return torch.eye(n, device=device).to(dt)


def _module(cls, *args, d):
    torch.manual_seed(0)
    return cls(*args).to(d)


# name -> (fn(dtype) -> tensor, policy on the CPU)
CPU_CASES = {
    "matmul": (lambda d: torch.matmul(r(3, 4, dt=d), r(4, 5, dt=d)), "L"),
    "__matmul__": (lambda d: r(3, 4, dt=d) @ r(4, 5, dt=d), "L"),
    "mm": (lambda d: torch.mm(r(3, 4, dt=d), r(4, 5, dt=d)), "L"),
    "Tensor.mm": (lambda d: r(3, 4, dt=d).mm(r(4, 5, dt=d)), "L"),
    "bmm": (lambda d: torch.bmm(r(2, 3, 4, dt=d), r(2, 4, 5, dt=d)), "L"),
    "baddbmm": (lambda d: torch.baddbmm(r(2, 3, 5, dt=d), r(2, 3, 4, dt=d), r(2, 4, 5, dt=d)), "L"),
    "addmm": (lambda d: torch.addmm(r(3, 5, dt=d), r(3, 4, dt=d), r(4, 5, dt=d)), "L"),
    "addbmm": (lambda d: torch.addbmm(r(3, 5, dt=d), r(2, 3, 4, dt=d), r(2, 4, 5, dt=d)), "L"),
    "addmv": (lambda d: torch.addmv(r(3, dt=d), r(3, 4, dt=d), r(4, dt=d)), "N"),
    "addr": (lambda d: torch.addr(r(3, 4, dt=d), r(3, dt=d), r(4, dt=d)), "N"),
    "mv": (lambda d: torch.mv(r(3, 4, dt=d), r(4, dt=d)), "N"),
    "dot": (lambda d: torch.dot(r(4, dt=d), r(4, dt=d)), "N"),
    "vdot": (lambda d: torch.vdot(r(4, dt=d), r(4, dt=d)), "N"),
    "outer": (lambda d: torch.outer(r(4, dt=d), r(3, dt=d)), "N"),
    "inner 1-d": (lambda d: torch.inner(r(4, dt=d), r(4, dt=d)), "N"),
    "inner 2-d": (lambda d: torch.inner(r(3, 4, dt=d), r(2, 4, dt=d)), "L"),
    "kron": (lambda d: torch.kron(r(2, 2, dt=d), r(2, 2, dt=d)), "N"),
    "linalg.vecdot": (lambda d: torch.linalg.vecdot(r(3, 4, dt=d), r(3, 4, dt=d)), "L"),
    "linalg.multi_dot": (lambda d: torch.linalg.multi_dot([r(3, 4, dt=d), r(4, 5, dt=d), r(5, 2, dt=d)]), "L"),
    "chain_matmul": (lambda d: torch.chain_matmul(r(3, 4, dt=d), r(4, 5, dt=d)), "L"),
    "matrix_power": (lambda d: torch.matrix_power(r(3, 3, dt=d), 2), "L"),
    "tensordot": (lambda d: torch.tensordot(r(3, 4, dt=d), r(4, 5, dt=d), dims=1), "L"),
    "einsum contraction": (lambda d: torch.einsum("ij,jk->ik", r(3, 4, dt=d), r(4, 5, dt=d)), "L"),
    "einsum dot": (lambda d: torch.einsum("i,i->", r(4, dt=d), r(4, dt=d)), "L"),
    "einsum 3 operands": (lambda d: torch.einsum("i,i,i->", r(4, dt=d), r(4, dt=d), r(4, dt=d)), "L"),
    "einsum outer": (lambda d: torch.einsum("i,j->ij", r(4, dt=d), r(3, dt=d)), "N"),
    "einsum hadamard": (lambda d: torch.einsum("ij,ij->ij", r(3, 4, dt=d), r(3, 4, dt=d)), "N"),
    "einsum trace": (lambda d: torch.einsum("ii->", r(3, 3, dt=d)), "N"),
    "linear": (lambda d: F.linear(r(3, 4, dt=d), r(5, 4, dt=d), r(5, dt=d)), "L"),
    "linear no bias": (lambda d: F.linear(r(3, 4, dt=d), r(5, 4, dt=d)), "L"),
    "linear 3-d": (lambda d: F.linear(r(2, 3, 4, dt=d), r(5, 4, dt=d), r(5, dt=d)), "L"),
    "bilinear": (lambda d: F.bilinear(r(3, 4, dt=d), r(3, 2, dt=d), r(5, 4, 2, dt=d), r(5, dt=d)), "N"),
    "conv1d": (lambda d: F.conv1d(r(1, 2, 8, dt=d), r(3, 2, 3, dt=d), r(3, dt=d)), "L"),
    "conv2d": (lambda d: F.conv2d(r(1, 2, 6, 6, dt=d), r(3, 2, 3, 3, dt=d), r(3, dt=d)), "L"),
    "conv3d": (lambda d: F.conv3d(r(1, 2, 4, 4, 4, dt=d), r(3, 2, 3, 3, 3, dt=d)), "L"),
    "conv_transpose1d": (lambda d: F.conv_transpose1d(r(1, 2, 8, dt=d), r(2, 3, 3, dt=d)), "L"),
    "conv_transpose2d": (lambda d: F.conv_transpose2d(r(1, 2, 5, 5, dt=d), r(2, 3, 3, 3, dt=d), r(3, dt=d)), "L"),
    "conv_transpose3d": (lambda d: F.conv_transpose3d(r(1, 2, 3, 3, 3, dt=d), r(2, 3, 2, 2, 2, dt=d)), "L"),
    "unfold": (lambda d: F.unfold(r(1, 2, 4, 4, dt=d), 2), "N"),
    "prelu": (lambda d: F.prelu(r(2, 3, 4, dt=d) - 0.5, r(3, dt=d)), "L"),
    "scaled_dot_product_attention": (lambda d: F.scaled_dot_product_attention(
        r(1, 2, 3, 4, dt=d), r(1, 2, 3, 4, dt=d), r(1, 2, 3, 4, dt=d)), "L"),
    "avg_pool3d": (lambda d: F.avg_pool3d(r(1, 1, 4, 4, 4, dt=d), 2), "F"),
    "avg_pool2d": (lambda d: F.avg_pool2d(r(1, 1, 4, 4, dt=d), 2), "N"),
    "max_pool3d": (lambda d: F.max_pool3d(r(1, 1, 4, 4, 4, dt=d), 2), "F"),
    "max_pool2d": (lambda d: F.max_pool2d(r(1, 1, 4, 4, dt=d), 2), "N"),
    "adaptive_avg_pool3d": (lambda d: F.adaptive_avg_pool3d(r(1, 1, 4, 4, 4, dt=d), 2), "F"),
    "adaptive_max_pool3d": (lambda d: F.adaptive_max_pool3d(r(1, 1, 4, 4, 4, dt=d), 2), "F"),
    "adaptive_avg_pool2d": (lambda d: F.adaptive_avg_pool2d(r(1, 1, 4, 4, dt=d), 2), "N"),
    "max_unpool2d": (lambda d: F.max_unpool2d(*F.max_pool2d(r(1, 1, 4, 4, dt=d), 2, return_indices=True), 2), "F"),
    "max_unpool3d": (lambda d: F.max_unpool3d(*F.max_pool3d(r(1, 1, 4, 4, 4, dt=d), 2, return_indices=True), 2),
                     "F"),
    "pad reflect 1-d": (lambda d: F.pad(r(1, 2, 5, dt=d), (1, 1), mode="reflect"), "F"),
    "pad reflect 2-d": (lambda d: F.pad(r(1, 2, 5, 5, dt=d), (1, 1, 1, 1), mode="reflect"), "F"),
    "pad reflect 3-d": (lambda d: F.pad(r(1, 2, 3, 3, 3, dt=d), (1, 1, 1, 1, 1, 1), mode="reflect"), "N"),
    "pad replicate 1-d": (lambda d: F.pad(r(1, 2, 5, dt=d), (1, 1), mode="replicate"), "F"),
    "pad replicate 2-d": (lambda d: F.pad(r(1, 2, 5, 5, dt=d), (1, 1, 1, 1), mode="replicate"), "F"),
    "pad replicate 3-d": (lambda d: F.pad(r(1, 2, 3, 3, 3, dt=d), (1, 1, 1, 1, 1, 1), mode="replicate"), "F"),
    "pad circular": (lambda d: F.pad(r(1, 2, 5, dt=d), (1, 1), mode="circular"), "N"),
    "pad constant": (lambda d: F.pad(r(1, 2, 5, dt=d), (1, 1)), "N"),
    "grid_sample 2-d": (lambda d: F.grid_sample(r(1, 1, 4, 4, dt=d), r(1, 3, 3, 2, dt=d) * 2 - 1,
                                                align_corners=False), "F"),
    "grid_sample 3-d": (lambda d: F.grid_sample(r(1, 1, 3, 4, 4, dt=d), r(1, 2, 3, 3, 3, dt=d) * 2 - 1,
                                                align_corners=False), "F"),
    "prod": (lambda d: torch.prod(m(5, dt=d)), "F"),
    "prod dim": (lambda d: m(3, 5, dt=d).prod(1), "F"),
    "quantile": (lambda d: torch.quantile(r(5, dt=d), r(2, dt=d)), "F"),
    "quantile float q": (lambda d: torch.quantile(r(5, dt=d), 0.3), "F"),
    "nanquantile": (lambda d: torch.nanquantile(r(5, dt=d), 0.3), "F"),
    "cdist": (lambda d: torch.cdist(r(3, 4, dt=d), r(5, 4, dt=d)), "F"),
    "trace": (lambda d: torch.trace(r(3, 3, dt=d)), "F"),
    "inverse": (lambda d: torch.inverse(r(3, 3, dt=d) + 3 * _eye(3, d)), "F"),
    "linalg.inv": (lambda d: torch.linalg.inv(r(3, 3, dt=d) + 3 * _eye(3, d)), "F"),
    "linalg.solve": (lambda d: torch.linalg.solve(r(3, 3, dt=d) + 3 * _eye(3, d), r(3, dt=d)), "F"),
    "mse_loss": (lambda d: F.mse_loss(r(5, dt=d), r(5, dt=d)), "F"),
    "l1_loss": (lambda d: F.l1_loss(r(5, dt=d), r(5, dt=d)), "F"),
    "huber_loss": (lambda d: F.huber_loss(r(5, dt=d), r(5, dt=d)), "F"),
    "smooth_l1_loss": (lambda d: F.smooth_l1_loss(r(5, dt=d), r(5, dt=d)), "F"),
    "nll_loss": (lambda d: F.nll_loss(r(4, 3, dt=d), _long([0, 1, 2, 0])), "F"),
    "nll_loss 2-d": (lambda d: F.nll_loss(r(2, 3, 2, 2, dt=d), torch.zeros(2, 2, 2, dtype=torch.int64)), "F"),
    "cross_entropy": (lambda d: F.cross_entropy(r(4, 3, dt=d), _long([0, 1, 2, 0])), "F"),
    "cross_entropy probabilities": (lambda d: F.cross_entropy(r(4, 3, dt=d), r(4, 3, dt=d)), "F"),
    "nn.CrossEntropyLoss": (lambda d: torch.nn.CrossEntropyLoss()(r(4, 3, dt=d), _long([0, 1, 2, 0])), "F"),
    "binary_cross_entropy": (lambda d: F.binary_cross_entropy(r(5, dt=d), r(5, dt=d)), "F"),
    "binary_cross_entropy_with_logits": (lambda d: F.binary_cross_entropy_with_logits(r(5, dt=d), r(5, dt=d)), "F"),
    "kl_div": (lambda d: F.kl_div(r(5, dt=d), r(5, dt=d), reduction="batchmean"), "F"),
    "poisson_nll_loss": (lambda d: F.poisson_nll_loss(r(5, dt=d), r(5, dt=d)), "F"),
    "gaussian_nll_loss": (lambda d: F.gaussian_nll_loss(r(5, dt=d), r(5, dt=d), m(5, dt=d)), "N"),
    "hinge_embedding_loss": (lambda d: F.hinge_embedding_loss(r(5, dt=d), torch.ones(5, dtype=d)), "F"),
    "margin_ranking_loss": (lambda d: F.margin_ranking_loss(r(5, dt=d), r(5, dt=d), torch.ones(5, dtype=d)), "F"),
    "soft_margin_loss": (lambda d: F.soft_margin_loss(r(5, dt=d), torch.ones(5, dtype=d)), "F"),
    "cosine_embedding_loss": (lambda d: F.cosine_embedding_loss(r(3, 4, dt=d), r(3, 4, dt=d),
                                                                torch.ones(3, dtype=d)), "F"),
    "triplet_margin_loss": (lambda d: F.triplet_margin_loss(r(3, 4, dt=d), r(3, 4, dt=d), r(3, 4, dt=d)), "F"),
    "multi_margin_loss": (lambda d: F.multi_margin_loss(r(3, 4, dt=d), _long([0, 1, 2])), "F"),
    "multilabel_margin_loss": (lambda d: F.multilabel_margin_loss(r(3, 4, dt=d), _long([[0, 1, -1, 0]] * 3)), "F"),
    "multilabel_soft_margin_loss": (lambda d: F.multilabel_soft_margin_loss(r(3, 4, dt=d),
                                                                            torch.ones(3, 4, dtype=d)), "N"),
    "cosine_similarity": (lambda d: F.cosine_similarity(r(3, 4, dt=d), r(3, 4, dt=d)), "N"),
    "pairwise_distance": (lambda d: F.pairwise_distance(r(3, 4, dt=d), r(3, 4, dt=d)), "N"),
    "dist": (lambda d: torch.dist(r(3, 4, dt=d), r(3, 4, dt=d)), "N"),
    "normalize": (lambda d: F.normalize(r(3, 4, dt=d)), "N"),
    "norm": (lambda d: torch.norm(r(3, 4, dt=d)), "N"),
    "linalg.norm": (lambda d: torch.linalg.norm(r(3, 4, dt=d)), "N"),
    "linalg.vector_norm": (lambda d: torch.linalg.vector_norm(r(3, 4, dt=d)), "N"),
    "renorm": (lambda d: torch.renorm(r(3, 4, dt=d), 2, 0, 1.0), "N"),
    "layer_norm": (lambda d: F.layer_norm(r(3, 4, dt=d), (4,), r(4, dt=d), r(4, dt=d)), "N"),
    "group_norm": (lambda d: F.group_norm(r(2, 4, 3, dt=d), 2, r(4, dt=d), r(4, dt=d)), "N"),
    "instance_norm": (lambda d: F.instance_norm(r(2, 4, 3, dt=d)), "N"),
    "rms_norm": (lambda d: F.rms_norm(r(3, 4, dt=d), (4,)), "N"),
    "local_response_norm": (lambda d: F.local_response_norm(r(1, 4, 3, 3, dt=d), 2), "F"),
    "softmax": (lambda d: torch.softmax(r(3, 4, dt=d), -1), "N"),
    "F.log_softmax": (lambda d: F.log_softmax(r(3, 4, dt=d), -1), "N"),
    "softmin": (lambda d: F.softmin(r(3, 4, dt=d), -1), "N"),
    "softplus": (lambda d: F.softplus(r(3, 4, dt=d)), "N"),
    "gelu": (lambda d: F.gelu(r(3, 4, dt=d)), "N"),
    "exp": (lambda d: torch.exp(r(5, dt=d)), "N"),
    "log": (lambda d: m(5, dt=d).log(), "N"),
    "log2": (lambda d: torch.log2(m(5, dt=d)), "N"),
    "erfinv": (lambda d: torch.erfinv(r(5, dt=d)), "N"),
    "reciprocal": (lambda d: torch.reciprocal(m(5, dt=d)), "N"),
    "rsqrt": (lambda d: torch.rsqrt(m(5, dt=d)), "N"),
    "pow": (lambda d: torch.pow(m(5, dt=d), 2), "N"),
    "__rpow__": (lambda d: 2 ** m(5, dt=d), "N"),
    "__rtruediv__": (lambda d: 2 / m(5, dt=d), "N"),
    "sum": (lambda d: r(3, 5, dt=d).sum(1), "N"),
    "cumsum": (lambda d: torch.cumsum(r(5, dt=d), 0), "N"),
    "cumprod": (lambda d: torch.cumprod(m(5, dt=d), 0), "N"),
    "logsumexp": (lambda d: torch.logsumexp(r(5, dt=d), 0), "N"),
    "addcmul": (lambda d: torch.addcmul(r(5, dt=d), r(5, dt=d), r(5, dt=d)), "N"),
    "addcdiv": (lambda d: torch.addcdiv(r(5, dt=d), r(5, dt=d), m(5, dt=d)), "N"),
    "atan2": (lambda d: torch.atan2(r(5, dt=d), r(5, dt=d)), "N"),
    "cross": (lambda d: torch.cross(r(4, 3, dt=d), r(4, 3, dt=d), dim=1), "N"),
    "cat": (lambda d: torch.cat([r(2, dt=d), r(3, dt=d)]), "N"),
    "stack": (lambda d: torch.stack([r(2, dt=d), r(2, dt=d)]), "N"),
    "index_copy": (lambda d: torch.index_copy(r(4, 2, dt=d), 0, _long([0, 2]), r(2, 2, dt=d)), "N"),
    "index_put": (lambda d: torch.index_put(r(4, dt=d), (_long([0, 2]),), r(2, dt=d)), "N"),
    "scatter_add": (lambda d: torch.scatter_add(r(4, dt=d), 0, _long([0, 2]), r(2, dt=d)), "N"),
    "interpolate": (lambda d: F.interpolate(r(1, 1, 4, 4, dt=d), scale_factor=2, mode="bilinear"), "N"),
    "nn.Linear": (lambda d: _module(torch.nn.Linear, 4, 3, d=d)(r(2, 4, dt=d)), "L"),
    "nn.Conv2d": (lambda d: _module(torch.nn.Conv2d, 2, 3, 3, d=d)(r(1, 2, 5, 5, dt=d)), "L"),
    "nn.MultiheadAttention": (lambda d: _module(torch.nn.MultiheadAttention, 4, 2, d=d)(
        r(3, 1, 4, dt=d), r(3, 1, 4, dt=d), r(3, 1, 4, dt=d))[0], "L"),
    "nn.RNNCell": (lambda d: _module(torch.nn.RNNCell, 4, 3, d=d)(r(2, 4, dt=d)), "L"),
    "nn.LSTMCell": (lambda d: _module(torch.nn.LSTMCell, 4, 3, d=d)(r(2, 4, dt=d))[0], "N"),
    "nn.GRUCell": (lambda d: _module(torch.nn.GRUCell, 4, 3, d=d)(r(2, 4, dt=d)), "N"),
    "nn.RNN": (lambda d: _module(torch.nn.RNN, 4, 3, d=d)(r(2, 1, 4, dt=d))[0], "L"),
    "nn.LSTM": (lambda d: _module(torch.nn.LSTM, 4, 3, d=d)(r(2, 1, 4, dt=d))[0], "L"),
    "nn.GRU": (lambda d: _module(torch.nn.GRU, 4, 3, d=d)(r(2, 1, 4, dt=d))[0], "N"),
}

_EXPECT = {"L": ("lp", "lp"), "F": (torch.float32, torch.float32), "N": (torch.float32, "lp")}


@pytest.mark.parametrize("lp", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(CPU_CASES))
def test_cpu_op_dtype(name, lp):
    """The result dtype under autocast('cpu', dtype=lp) for float32, low-precision and float64 inputs."""
    fn, policy = CPU_CASES[name]
    want = [lp if w == "lp" else w for w in _EXPECT[policy]]
    with torch.autocast("cpu", dtype=lp):
        got = [fn(torch.float32).dtype, fn(lp).dtype, fn(torch.float64).dtype]
    assert got == want + [torch.float64]


def test_cpu_float16_input_under_bfloat16_autocast():
    """Lower ops cast any floating input to the autocast dtype; fp32 ops to float32."""
    h = r(2, 2, dt=torch.float16)
    with torch.autocast("cpu"):
        assert torch.addmm(h, h, h).dtype is torch.bfloat16
        assert F.mse_loss(h, h).dtype is torch.float32


# -- values and mixed inputs ------------------------------------------------------------------------------
def _bf16(a):
    import ml_dtypes
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def test_values_of_a_lower_op():
    """mm under bfloat16 autocast: the product of the bfloat16-rounded inputs, rounded to bfloat16."""
    a, b = r(3, 4), r(4, 5)
    with torch.autocast("cpu"):
        y = torch.mm(a, b)
    ref = _bf16(_bf16(a.numpy()) @ _bf16(b.numpy()))
    np.testing.assert_allclose(y.float().numpy(), ref, rtol=2 ** -7, atol=0)


def test_values_of_an_fp32_op():
    """mse_loss of bfloat16 inputs: computed in float32 from the bfloat16 values."""
    a, b = r(6, dt=torch.bfloat16), m(6, dt=torch.bfloat16)
    with torch.autocast("cpu"):
        y = F.mse_loss(a, b)
    ref = np.mean((a.float().numpy().astype(np.float64) - b.float().numpy()) ** 2)
    assert y.dtype is torch.float32
    np.testing.assert_allclose(y.item(), ref, rtol=1e-6)


def test_values_of_a_conv():
    """conv1d under float16 autocast agrees with a float64 NumPy correlation of the rounded inputs."""
    x, w = r(1, 1, 6), r(1, 1, 3)
    with torch.autocast("cpu", dtype=torch.float16):
        y = F.conv1d(x, w)
    xh, wh = (v.numpy().astype(np.float16).astype(np.float64) for v in (x, w))
    ref = np.correlate(xh[0, 0], wh[0, 0], mode="valid")
    assert y.dtype is torch.float16
    np.testing.assert_allclose(y.float().numpy()[0, 0], ref, rtol=2e-3)


def test_promote_ops_take_the_widest_input():
    lp, f32 = r(2, dt=torch.bfloat16), r(2)
    with torch.autocast("cpu"):
        assert torch.cat([lp, f32]).dtype is torch.float32
        assert torch.cat([lp, lp]).dtype is torch.bfloat16
        assert torch.stack([lp, f32]).dtype is torch.float32
        assert torch.cat([lp, r(2, dt=torch.float64)]).dtype is torch.float64
        assert torch.cat([lp, _long([1, 2])]).dtype is torch.bfloat16
        out = torch.index_copy(r(4, dt=torch.bfloat16), 0, _long([0, 2]), r(2))
        assert out.dtype is torch.float32 and out[0].item() == r(2)[0].item()
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType in at::autocast::prioritize"):
            torch.cat([r(2, dt=torch.float16), lp])


def test_float64_and_integer_inputs_are_not_cast():
    a64 = r(2, 3, dt=torch.float64)
    i = torch.ones(2, 2, dtype=torch.int64)
    with torch.autocast("cpu"):
        assert (a64 @ r(3, 2, dt=torch.float64)).dtype is torch.float64
        assert (i @ i).dtype is torch.int64 and (i @ i).tolist() == [[2, 2], [2, 2]]
        assert torch.prod(_long([2, 3])).item() == 6
        with pytest.raises(RuntimeError, match=r"expected m1 and m2 to have the same dtype, but got: double != "):
            a64 @ r(3, 2)                        # the float32 operand became bfloat16 (as in PyTorch)


def test_out_and_inplace_are_not_autocast():
    """Calls with out= and in-place ops run in their own dtypes (PyTorch's eligibility rule)."""
    a, b = r(2, 3), r(3, 2)
    with torch.autocast("cpu"):
        out = torch.empty(2, 2)
        assert torch.mm(a, b, out=out) is out and out.dtype is torch.float32
        c = r(2, 2)
        assert c.addmm_(a, b).dtype is torch.float32
        assert torch.sum(r(3, dt=torch.bfloat16), dtype=torch.float64).dtype is torch.float64


def test_ops_inside_a_listed_op_are_not_autocast():
    """cdist (fp32 on the CPU) computes in float32 throughout, though it is made of norms and
    products; its bfloat16 inputs are cast once."""
    x = r(3, 4, dt=torch.bfloat16)
    with torch.autocast("cpu"):
        y = torch.cdist(x, x, compute_mode="use_mm_for_euclid_dist")
    xf = x.float().numpy().astype(np.float64)
    ref = np.sqrt(np.maximum(((xf[:, None] - xf[None]) ** 2).sum(-1), 0))
    assert y.dtype is torch.float32
    np.testing.assert_allclose(y.numpy(), ref, atol=1e-3)


# -- the CUDA lists, on the CuPy stand-in -----------------------------------------------------------------
def _c(*s, dt=torch.float32):
    return r(*s, dt=dt, device="cuda")


def _cm(*s, dt=torch.float32):
    return m(*s, dt=dt, device="cuda")


CUDA_CASES = {
    "matmul": (lambda d: _c(3, 4, dt=d) @ _c(4, 5, dt=d), "L"),
    "mv": (lambda d: torch.mv(_c(3, 4, dt=d), _c(4, dt=d)), "L"),
    "addmv": (lambda d: torch.addmv(_c(3, dt=d), _c(3, 4, dt=d), _c(4, dt=d)), "L"),
    "addr": (lambda d: torch.addr(_c(3, 4, dt=d), _c(3, dt=d), _c(4, dt=d)), "L"),
    "einsum outer": (lambda d: torch.einsum("i,j->ij", _c(4, dt=d), _c(3, dt=d)), "L"),
    "linear": (lambda d: F.linear(_c(3, 4, dt=d), _c(5, 4, dt=d), _c(5, dt=d)), "L"),
    "conv2d": (lambda d: F.conv2d(_c(1, 2, 5, 5, dt=d), _c(3, 2, 3, 3, dt=d)), "L"),
    "prelu": (lambda d: F.prelu(_c(2, 3, 4, dt=d), _c(3, dt=d)), "L"),
    "nn.LSTMCell": (lambda d: _module(torch.nn.LSTMCell, 4, 3, d=d).to("cuda")(_c(2, 4, dt=d))[1], "L"),
    "nn.GRUCell": (lambda d: _module(torch.nn.GRUCell, 4, 3, d=d).to("cuda")(_c(2, 4, dt=d)), "L"),
    "exp": (lambda d: torch.exp(_c(5, dt=d)), "F"),
    "log": (lambda d: _cm(5, dt=d).log(), "F"),
    "log10": (lambda d: torch.log10(_cm(5, dt=d)), "F"),
    "erfinv": (lambda d: torch.erfinv(_c(5, dt=d)), "F"),
    "pow": (lambda d: _cm(5, dt=d) ** 2, "F"),
    "__rpow__": (lambda d: 2 ** _cm(5, dt=d), "F"),
    "__rtruediv__": (lambda d: 2 / _cm(5, dt=d), "F"),
    "reciprocal": (lambda d: torch.reciprocal(_cm(5, dt=d)), "F"),
    "rsqrt": (lambda d: _cm(5, dt=d).rsqrt(), "F"),
    "softmax": (lambda d: _c(3, 4, dt=d).softmax(-1), "F"),
    "softmin": (lambda d: F.softmin(_c(3, 4, dt=d), -1), "F"),
    "log_softmax": (lambda d: F.log_softmax(_c(3, 4, dt=d), -1), "F"),
    "sum": (lambda d: _c(3, 4, dt=d).sum(), "F"),
    "cumsum": (lambda d: torch.cumsum(_c(5, dt=d), 0), "F"),
    "prod": (lambda d: torch.prod(_cm(5, dt=d)), "F"),
    "layer_norm": (lambda d: F.layer_norm(_c(3, 4, dt=d), (4,)), "F"),
    "group_norm": (lambda d: F.group_norm(_c(2, 4, 3, dt=d), 2), "F"),
    "norm": (lambda d: torch.norm(_c(3, 4, dt=d)), "F"),
    "normalize": (lambda d: F.normalize(_c(3, 4, dt=d)), "F"),
    "cosine_similarity": (lambda d: F.cosine_similarity(_c(3, 4, dt=d), _c(3, 4, dt=d)), "F"),
    "softplus": (lambda d: F.softplus(_c(3, 4, dt=d)), "F"),
    "logsumexp": (lambda d: torch.logsumexp(_c(5, dt=d), 0), "F"),
    "mse_loss": (lambda d: F.mse_loss(_c(5, dt=d), _c(5, dt=d)), "F"),
    "cross_entropy": (lambda d: F.cross_entropy(_c(4, 3, dt=d), _long([0, 1, 2, 0], "cuda")), "F"),
    "interpolate": (lambda d: F.interpolate(_c(1, 1, 4, 4, dt=d), scale_factor=2, mode="bilinear"), "F"),
    "mm": (lambda d: torch.mm(_c(3, 4, dt=d), _c(4, 5, dt=d)), "L"),
    "bmm": (lambda d: torch.bmm(_c(2, 3, 4, dt=d), _c(2, 4, 5, dt=d)), "L"),
    "addmm": (lambda d: torch.addmm(_c(3, 5, dt=d), _c(3, 4, dt=d), _c(4, 5, dt=d)), "L"),
    "baddbmm": (lambda d: torch.baddbmm(_c(2, 3, 5, dt=d), _c(2, 3, 4, dt=d), _c(2, 4, 5, dt=d)), "L"),
    "addbmm": (lambda d: torch.addbmm(_c(3, 5, dt=d), _c(2, 3, 4, dt=d), _c(2, 4, 5, dt=d)), "L"),
    "linalg.vecdot": (lambda d: torch.linalg.vecdot(_c(3, 4, dt=d), _c(3, 4, dt=d)), "L"),
    "conv1d": (lambda d: F.conv1d(_c(1, 2, 8, dt=d), _c(3, 2, 3, dt=d)), "L"),
    "conv_transpose2d": (lambda d: F.conv_transpose2d(_c(1, 2, 4, 4, dt=d), _c(2, 3, 3, 3, dt=d)), "L"),
    "scaled_dot_product_attention": (lambda d: F.scaled_dot_product_attention(
        _c(1, 2, 3, 4, dt=d), _c(1, 2, 3, 4, dt=d), _c(1, 2, 3, 4, dt=d)), "L"),
    "nn.RNNCell": (lambda d: _module(torch.nn.RNNCell, 4, 3, d=d).to("cuda")(_c(2, 4, dt=d)), "L"),
    "acos": (lambda d: torch.acos(_c(5, dt=d)), "F"),
    "asin": (lambda d: torch.asin(_c(5, dt=d)), "F"),
    "cosh": (lambda d: torch.cosh(_c(5, dt=d)), "F"),
    "sinh": (lambda d: torch.sinh(_c(5, dt=d)), "F"),
    "tan": (lambda d: torch.tan(_c(5, dt=d)), "F"),
    "expm1": (lambda d: torch.expm1(_c(5, dt=d)), "F"),
    "log1p": (lambda d: torch.log1p(_c(5, dt=d)), "F"),
    "log2": (lambda d: torch.log2(_cm(5, dt=d)), "F"),
    "cumprod": (lambda d: torch.cumprod(_cm(5, dt=d), 0), "F"),
    "linalg.vector_norm": (lambda d: torch.linalg.vector_norm(_c(3, 4, dt=d)), "F"),
    "linalg.matrix_norm": (lambda d: torch.linalg.matrix_norm(_c(3, 4, dt=d)), "F"),
    "dist": (lambda d: torch.dist(_c(3, 4, dt=d), _c(3, 4, dt=d)), "F"),
    "pdist": (lambda d: F.pdist(_c(3, 4, dt=d)), "F"),
    "cdist": (lambda d: torch.cdist(_c(3, 4, dt=d), _c(2, 4, dt=d)), "F"),
    "renorm": (lambda d: torch.renorm(_c(3, 4, dt=d), 2, 0, 1.0), "F"),
    "l1_loss": (lambda d: F.l1_loss(_c(5, dt=d), _c(5, dt=d)), "F"),
    "smooth_l1_loss": (lambda d: F.smooth_l1_loss(_c(5, dt=d), _c(5, dt=d)), "F"),
    "huber_loss": (lambda d: F.huber_loss(_c(5, dt=d), _c(5, dt=d)), "F"),
    "nll_loss": (lambda d: F.nll_loss(_c(4, 3, dt=d), _long([0, 1, 2, 0], "cuda")), "F"),
    "kl_div": (lambda d: F.kl_div(_c(5, dt=d), _c(5, dt=d), reduction="batchmean"), "F"),
    "binary_cross_entropy_with_logits": (lambda d: F.binary_cross_entropy_with_logits(
        _c(5, dt=d), _c(5, dt=d)), "F"),
    "poisson_nll_loss": (lambda d: F.poisson_nll_loss(_c(5, dt=d), _c(5, dt=d)), "F"),
    "hinge_embedding_loss": (lambda d: F.hinge_embedding_loss(_c(5, dt=d), _c(5, dt=d) * 0 + 1), "F"),
    "soft_margin_loss": (lambda d: F.soft_margin_loss(_c(5, dt=d), _c(5, dt=d) * 0 + 1), "F"),
    "triplet_margin_loss": (lambda d: F.triplet_margin_loss(_c(3, 4, dt=d), _c(3, 4, dt=d), _c(3, 4, dt=d)), "F"),
    "multi_margin_loss": (lambda d: F.multi_margin_loss(_c(3, 4, dt=d), _long([0, 1, 2], "cuda")), "F"),
    "avg_pool3d": (lambda d: F.avg_pool3d(_c(1, 1, 4, 4, 4, dt=d), 2), "N"),
    "pad reflect": (lambda d: F.pad(_c(1, 2, 5, dt=d), (1, 1), mode="reflect"), "N"),
    "trace": (lambda d: torch.trace(_c(3, 3, dt=d)), "N"),
    "relu": (lambda d: F.relu(_c(5, dt=d)), "N"),
}


@pytest.mark.parametrize("name", list(CUDA_CASES))
def test_cuda_op_dtype(name, cuda_standin):
    """The result dtype under autocast('cuda') (float16) for float32 and float16 inputs."""
    fn, policy = CUDA_CASES[name]
    want = [torch.float16 if w == "lp" else w for w in _EXPECT[policy]]
    with torch.autocast("cuda"):
        got = [fn(torch.float32).dtype, fn(torch.float16).dtype]
    assert got == want


def test_cuda_promote_ops(cuda_standin):
    h, f = _c(3, dt=torch.float16), _c(3)
    with torch.autocast("cuda"):
        assert torch.addcmul(f, h, h).dtype is torch.float32
        assert torch.addcmul(h, h, h).dtype is torch.float16
        assert torch.atan2(h, f).dtype is torch.float32
        assert torch.dot(h, f).dtype is torch.float32
        assert torch.dot(h, h).dtype is torch.float16
        assert torch.cross(_c(2, 3, dt=torch.float16), _c(2, 3), dim=1).dtype is torch.float32
        assert torch.scatter_add(h, 0, _long([0, 2], "cuda"), f[:2]).dtype is torch.float32
        assert torch.tensordot(h.reshape(1, 3), f.reshape(3, 1), dims=1).dtype is torch.float32


def test_cuda_set_opt_dtype_ops_respect_dtype(cuda_standin):
    """sum/softmax/cumsum with an explicit dtype= keep it (PyTorch's fp32_set_opt_dtype)."""
    h = _c(4, dt=torch.float16)
    with torch.autocast("cuda"):
        assert torch.sum(h, dtype=torch.float16).dtype is torch.float16
        assert torch.softmax(h, 0, dtype=torch.float16).dtype is torch.float16
        assert torch.cumsum(h, 0, dtype=torch.float64).dtype is torch.float64
        s = h.sum()
    np.testing.assert_allclose(s.item(), h.float().cpu().numpy().astype(np.float64).sum(), rtol=1e-6)


def test_cuda_binary_cross_entropy_is_banned(cuda_standin):
    p = _c(4) * 0.5 + 0.25
    with torch.autocast("cuda"):
        with pytest.raises(RuntimeError, match=r"^torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
                                               r"are unsafe to autocast."):
            F.binary_cross_entropy(p, p)
    assert F.binary_cross_entropy(p, p).dtype is torch.float32


def test_cuda_autocast_leaves_cpu_tensors_alone(cuda_standin):
    """autocast('cuda') casts CUDA tensors only; autocast('cpu') leaves CUDA tensors alone."""
    with torch.autocast("cuda"):
        assert (r(2, 2) @ r(2, 2)).dtype is torch.float32
        assert (_c(2, 2) @ _c(2, 2)).dtype is torch.float16
    with torch.autocast("cpu"):
        assert (_c(2, 2) @ _c(2, 2)).dtype is torch.float32
