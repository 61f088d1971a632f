"""gradcheck and gradgradcheck for every differentiable op, from one table.

The table's coverage is itself tested: every backward-node name that appears in the op sources
(`"XxxBackward0"` literals in core/ops) must be produced by some case, so a new differentiable
op without a tested gradient makes this file fail.
"""
import os
import pathlib
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opcases import Case, nc, pos, r  # noqa: E402

import tensorplug as torch
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck

OPS_DIR = pathlib.Path(torch.__file__).parent / "ops"


def _setitem(t, key, value):
    t[key] = value
    return t


def _view_mul(h, b):
    v = h[1:].t()           # a (4, 2) view of rows 1.. of h
    v.mul_(b.unsqueeze(1))  # written through the view
    return h * v.sum()      # uses the base and the (rebased) view


def _view_of_view_add(h, b):
    d = h.t()[1]            # column 1 of h: a view of a view
    d[1:].add_(b)           # rows 1 and 2 of that column
    return h * h


def _buffer_rows(b):
    buf = torch.zeros(2, 3, dtype=torch.float64)
    buf[0].copy_(b)         # buf now carries b's gradient
    row = buf[1]            # made before the next write: its history is remade when it is used
    buf[1] = b * b
    return buf * row.sum()


CASES = [
    # pointwise binary, incl. broadcasting and non-contiguous operands
    Case("add_broadcast", lambda a, b: a + b, lambda: (r(2, 3, 1), r(4))),
    Case("add_alpha", lambda a, b: torch.add(a, b, alpha=2.5), lambda: (r(3), r(3))),
    Case("sub_noncontig", lambda a, b: a - b, lambda: (nc(3, 4), r(3, 4))),
    Case("mul_broadcast", lambda a, b: a * b, lambda: (r(3, 1), nc(3, 4))),
    Case("div", lambda a, b: a / b, lambda: (r(2, 3), pos(3))),
    Case("pow_scalar", lambda a: a ** 3, lambda: (r(4),)),
    Case("pow_tensor", lambda a, b: a ** b, lambda: (pos(3), r(3))),
    Case("maximum", torch.maximum, lambda: (r(5, seed=1), r(5, seed=2))),
    Case("minimum", torch.minimum, lambda: (r(5, seed=1), r(5, seed=2))),
    Case("atan2", torch.atan2, lambda: (r(4), pos(4))),
    Case("remainder", torch.remainder, lambda: (pos(4, seed=1) * 3, pos(4, seed=2))),
    Case("fmod", torch.fmod, lambda: (pos(4, seed=1) * 3, pos(4, seed=2))),
    Case("where", lambda a, b: torch.where(a > 0, a, b), lambda: (r(3, 4), r(4))),
    Case("clamp", lambda a: torch.clamp(a, -0.5, 0.5), lambda: (r(6),)),
    Case("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc") + a,
         lambda: (pos(3, seed=1) * 3, pos(3, seed=2))),
    Case("floor_divide", lambda a, b: torch.floor_divide(a, b) + b, lambda: (pos(3, seed=1) * 3, pos(3, seed=2))),
    # pointwise unary
    *[Case(n, getattr(torch, n), (lambda lo=lo, hi=hi: (r(2, 3, low=lo, high=hi),)))
      for n, lo, hi in [("neg", -1, 1), ("abs", 0.2, 1), ("exp", -1, 1), ("log", 0.2, 2), ("sqrt", 0.2, 2),
                        ("sin", -1, 1), ("cos", -1, 1), ("tan", -1, 1), ("tanh", -1, 1), ("sigmoid", -2, 2),
                        ("erf", -1, 1), ("log1p", -0.5, 1), ("expm1", -1, 1), ("sinh", -1, 1),
                        ("cosh", -1, 1), ("asin", -0.8, 0.8), ("acos", -0.8, 0.8), ("atan", -2, 2)]],
    *[Case(n, lambda a, n=n: getattr(torch, n)(a) + a, lambda: (r(5) * 3,))
      for n in ("sign", "floor", "ceil", "trunc", "round")],
    # conversions and in-place recording
    # float32 rounding needs a coarser finite-difference step
    Case("to_dtype", lambda a: a.to(torch.float32).to(torch.float64) * a, lambda: (r(3),), eps=1e-2, atol=1e-3),
    Case("clone", lambda a: a.clone() * a, lambda: (r(3),)),
    Case("inplace_chain", lambda a: (a * 2).add_(1).mul_(a), lambda: (r(3),)),
    Case("fill_", lambda a: (a * 1).fill_(2.0) * a, lambda: (r(3),)),
    Case("copy_", lambda a, b: (a * 1).copy_(b * 2) + a, lambda: (r(2, 3), r(3))),
    Case("unfold", lambda a: a.unfold(1, 3, 2) * 2, lambda: (r(2, 7),)),
    Case("sum_to_size", lambda a: a.sum_to_size(1, 4) * a.sum_to_size(4), lambda: (r(3, 4),)),
    Case("fill_diagonal_", lambda a: (a * 1).fill_diagonal_(2.0, wrap=True) * a, lambda: (r(5, 2),)),
    Case("copy_leaf_into_buffer", lambda a: torch.zeros(3, dtype=torch.float64).copy_(a) * a, lambda: (r(3),)),
    # in-place through views: the base's history is rebased (CopySlices), the view becomes a view of it
    Case("inplace_through_view", lambda a, b: _view_mul(a * 1, b), lambda: (r(3, 4), r(4))),
    Case("inplace_through_view_of_view", lambda a, b: _view_of_view_add(a * 1, b), lambda: (r(3, 4), r(2))),
    Case("inplace_on_buffer_view", lambda b: _buffer_rows(b), lambda: (r(3),)),
    # reductions and views
    Case("sum_dim", lambda a: a.sum(1), lambda: (nc(3, 4),)),
    Case("sum_all", lambda a: a.sum(), lambda: (r(3, 4),)),
    Case("reshape_copy", lambda a: a.reshape(6, 2) * 2, lambda: (nc(3, 4),)),
    Case("reshape_view", lambda a: a.reshape(6, 2) * 2, lambda: (r(3, 4),)),
    Case("reshape_same", lambda a: a.reshape(3, 4) * 2, lambda: (r(3, 4),)),
    Case("expand", lambda a: a.expand(2, 3, 4), lambda: (r(3, 1),)),
    Case("permute", lambda a: a.permute(2, 0, 1) * 1, lambda: (r(2, 3, 4),)),
    # shape, views and joining
    Case("transpose", lambda a: a.transpose(0, 2), lambda: (r(2, 1, 3),)),
    Case("squeeze", lambda a: a.squeeze(), lambda: (r(1, 3, 1),)),
    Case("unsqueeze", lambda a: a.unsqueeze(-1), lambda: (nc(2, 3),)),
    Case("cat", lambda a, b, c: torch.cat([a, b, c], 1), lambda: (r(2, 2), nc(2, 3), r(2, 0))),
    Case("stack", lambda a, b: torch.stack([a, b], 1), lambda: (r(2, 3), nc(2, 3))),
    Case("chunk", lambda a: a.chunk(3), lambda: (r(7),)),
    Case("split_list", lambda a: torch.split(a, [1, 0, 2]), lambda: (nc(3, 2),)),
    Case("narrow", lambda a: a.narrow(1, 1, 2), lambda: (nc(2, 4),)),
    Case("select", lambda a: a.select(0, -1), lambda: (r(3, 2),)),
    Case("diagonal", lambda a: a.diagonal(1), lambda: (r(3, 4),)),
    Case("tril", lambda a: a.tril(), lambda: (r(3, 3),)),
    Case("triu", lambda a: torch.triu(a, 1), lambda: (nc(3, 3),)),
    Case("flip", lambda a: a.flip(0, 1), lambda: (r(2, 3),)),
    Case("roll", lambda a: a.roll((1, -1), (0, 1)), lambda: (r(2, 3),)),
    Case("repeat", lambda a: a.repeat(2, 1, 2), lambda: (r(2, 2),)),
    Case("repeat_interleave", lambda a: a.repeat_interleave(2, dim=1), lambda: (r(2, 2),)),
    Case("repeat_interleave_t", lambda a: a.repeat_interleave(torch.tensor([2, 0, 1])), lambda: (r(3),)),
    # indexing (repeated indices must accumulate)
    Case("getitem_basic", lambda a: a[1:, ::2, None], lambda: (r(3, 4),)),
    Case("getitem_advanced_repeated", lambda a: a[[0, 2, 0], :, [1, 1, 0]], lambda: (nc(3, 2, 2),)),
    Case("getitem_mask", lambda a: a[a > 0], lambda: (r(3, 4),)),
    Case("setitem_nonleaf", lambda a, v: _setitem(a * 1, (slice(None), 1), v), lambda: (r(3, 4), r(3))),
    Case("setitem_advanced", lambda a, v: _setitem(a * 1, ([0, 2],), v), lambda: (r(3, 4), r(4))),
    Case("index_select", lambda a: a.index_select(1, torch.tensor([2, 0, 2])), lambda: (r(3, 4),)),
    Case("masked_select", lambda a: a.masked_select(torch.tensor([True, False, True])), lambda: (r(2, 3),)),
    Case("masked_fill", lambda a: a.masked_fill(torch.tensor([True, False, True]), 0.5), lambda: (r(2, 3),)),
    Case("masked_scatter", lambda a, s: a.masked_scatter(torch.tensor([True, False, True]), s),
         lambda: (r(2, 3), r(6))),
    Case("gather", lambda a: a.gather(1, torch.tensor([[0, 0], [2, 1]])), lambda: (r(2, 3),)),
    Case("scatter_src", lambda a, s: a.scatter(1, torch.tensor([[0], [2]]), s), lambda: (r(2, 3), r(2, 1))),
    Case("scatter_value", lambda a: a.scatter(1, torch.tensor([[0], [2]]), 1.5), lambda: (r(2, 3),)),
    Case("scatter_add_repeated", lambda a, s: a.scatter_add(1, torch.tensor([[0, 0], [2, 2]]), s),
         lambda: (r(2, 3), r(2, 2))),
    Case("index_add_repeated", lambda a, s: a.index_add(0, torch.tensor([1, 1]), s), lambda: (r(3, 2), r(2, 2))),
    Case("index_copy", lambda a, s: a.index_copy(0, torch.tensor([2, 0]), s), lambda: (r(3, 2), r(2, 2))),
    Case("index_fill", lambda a: a.index_fill(1, torch.tensor([1]), -1.0), lambda: (r(2, 3),)),
    Case("index_put_accumulate", lambda a, v: a.index_put((torch.tensor([0, 0]),), v, accumulate=True),
         lambda: (r(3, 2), r(2))),
    Case("take", lambda a: a.take(torch.tensor([0, 5, 5])), lambda: (nc(2, 3),)),
    Case("put", lambda a, v: a.put(torch.tensor([1, 4]), v), lambda: (r(2, 3), r(2))),
    # linear algebra
    Case("matmul_batched_broadcast", torch.matmul, lambda: (r(2, 1, 2, 3), nc(3, 2))),
    Case("matmul_1d", torch.matmul, lambda: (r(3), r(2, 3, 4))),
    Case("mm", torch.mm, lambda: (nc(2, 3), r(3, 2))),
    Case("bmm", torch.bmm, lambda: (r(2, 2, 3), r(2, 3, 2))),
    Case("mv", torch.mv, lambda: (r(2, 3), r(3))),
    Case("dot", torch.dot, lambda: (r(3), r(3, seed=1))),
    Case("addmm_beta0", lambda i, a, b: torch.addmm(i, a, b, beta=0), lambda: (r(2, 2), r(2, 3), r(3, 2))),
    Case("trace", torch.trace, lambda: (r(3, 3),)),
    Case("linalg_diagonal", lambda a: torch.linalg.diagonal(a), lambda: (r(2, 3, 3),)),
    Case("inv", lambda a: torch.linalg.inv(a + 3 * torch.eye(3, dtype=torch.float64)), lambda: (r(3, 3),)),
    Case("solve", lambda a, b: torch.linalg.solve(a + 3 * torch.eye(3, dtype=torch.float64), b),
         lambda: (r(3, 3), r(3, 2))),
    Case("det", torch.linalg.det, lambda: (r(3, 3),)),
    Case("slogdet", lambda a: torch.linalg.slogdet(a + 3 * torch.eye(3, dtype=torch.float64))[1],
         lambda: (r(3, 3),)),
    Case("vector_norm", lambda a: torch.linalg.vector_norm(a, 3, dim=1), lambda: (r(2, 3),)),
    Case("matrix_norm", lambda a: torch.linalg.matrix_norm(a, 1), lambda: (r(2, 3, 3),)),
    Case("matrix_norm_empty", lambda a: torch.linalg.matrix_norm(a, 1), lambda: (r(3, 0),)),
    Case("matrix_power_0", lambda a: torch.linalg.matrix_power(a, 0) * a, lambda: (r(2, 2),)),
    Case("matrix_power_3", lambda a: torch.linalg.matrix_power(a, 3), lambda: (r(2, 2),)),
    # nn: linear layers and activations, normalization, embedding
    Case("linear_addmm", F.linear, lambda: (r(3, 4), nc(2, 4), r(2, seed=3))),
    Case("linear_batched", F.linear, lambda: (r(2, 3, 4), r(2, 4, seed=1))),
    Case("relu", lambda a: torch.relu(a) * a, lambda: (r(3, 4),)),
    Case("elu", lambda a: F.elu(a, 0.7), lambda: (r(2, 3) * 2,)),
    Case("celu", lambda a: F.celu(a, 1.5), lambda: (r(2, 3) * 2,)),
    Case("softplus", lambda a: F.softplus(a, 2.0, 1.0), lambda: (r(2, 3) * 2,)),
    Case("logsigmoid", F.logsigmoid, lambda: (r(2, 3) * 3,)),
    Case("hardtanh", lambda a: F.hardtanh(a, -0.5, 0.5), lambda: (r(2, 3),)),
    Case("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         lambda: (r(3, 2, 2), r(2, seed=1), r(2, seed=2))),
    Case("batch_norm_eval", lambda x, w, b: F.batch_norm(x, torch.zeros(2, dtype=torch.float64),
                                                        torch.ones(2, dtype=torch.float64), w, b),
         lambda: (nc(3, 2), r(2, seed=1), r(2, seed=2))),
    Case("embedding", lambda w: F.embedding(torch.tensor([[0, 2], [2, 3]]), w) * w.sum(), lambda: (r(4, 2),)),
    Case("layer_norm", lambda x, w, b: F.layer_norm(x, (3,), w, b), lambda: (r(2, 3), r(3, seed=1), r(3, seed=2))),
    Case("gelu", lambda a: F.gelu(a) + F.gelu(a, approximate="tanh"), lambda: (r(2, 3) * 2,)),
    Case("embedding_bag_sum", lambda w, p: F.embedding_bag(torch.tensor([0, 2, 2, 1]), w, torch.tensor([0, 1, 1]),
                                                           mode="sum", per_sample_weights=p) ** 2,
         lambda: (r(3, 2), r(4, seed=1))),
    Case("embedding_bag_max", lambda w: F.embedding_bag(torch.tensor([[0, 2], [2, 1]]), w, mode="max") ** 2,
         lambda: (r(3, 2),)),
    # nn: convolution and pooling
    Case("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
         lambda: (r(1, 2, 4, 5), r(3, 2, 2, 2, seed=1), r(3, seed=2))),
    Case("conv1d_groups_same", lambda x, w: F.conv1d(x, w, padding="same", groups=2),
         lambda: (nc(1, 4, 5), r(2, 2, 2, seed=1))),
    Case("conv_transpose1d", lambda x, w: F.conv_transpose1d(x, w, stride=2, output_padding=1),
         lambda: (r(1, 2, 3), r(2, 2, 2))),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 2, stride=1, ceil_mode=True), lambda: (r(1, 1, 3, 3),)),
    Case("avg_pool2d", lambda x: F.avg_pool2d(x, 2, padding=1, count_include_pad=False), lambda: (r(1, 1, 3, 3),)),
    Case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (2, 1)), lambda: (r(1, 2, 3, 3),)),
    Case("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 2), lambda: (r(1, 2, 5),)),
    Case("lp_pool2d", lambda x: F.lp_pool2d(x, 2, 2), lambda: (pos(1, 1, 4, 4),)),
    # nn: losses and padding
    Case("binary_cross_entropy", lambda a, b: F.binary_cross_entropy(a, b),
         lambda: (r(2, 3, low=0.1, high=0.9), r(2, 3, low=0.0, high=1.0, seed=1))),
    Case("bce_with_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b),
         lambda: (r(2, 3, low=-3.0, high=3.0), r(2, 3, low=0.0, high=1.0, seed=1))),
    Case("pad_constant", lambda a: F.pad(a, (1, 2, -1, 1), value=0.5), lambda: (r(1, 2, 3),)),
    Case("pad_reflect", lambda a: F.pad(a, (2, 1), mode="reflect"), lambda: (r(1, 2, 4),)),
    Case("nll_loss_weighted", lambda a, w: F.nll_loss(a, torch.tensor([0, 2, 1]), weight=w, ignore_index=1),
         lambda: (r(3, 3), pos(3))),
    Case("cross_entropy_smoothing", lambda a: F.cross_entropy(a, torch.tensor([0, 2]), label_smoothing=0.1),
         lambda: (r(2, 3),)),
    Case("grid_sample", lambda x, g: F.grid_sample(x, g, align_corners=False),
         lambda: (r(1, 1, 3, 3), r(1, 2, 2, 2, low=-0.9, high=0.9))),
    Case("interpolate_bilinear", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
         lambda: (r(1, 1, 2, 3),)),
    # reductions, scans, sorting
    Case("mean_dim", lambda a: a.mean(1), lambda: (nc(3, 4),)),
    Case("mean_all", lambda a: a.mean(), lambda: (r(3, 4),)),
    Case("prod_dim", lambda a: a.prod(1), lambda: (r(3, 4),)),
    Case("prod_all", lambda a: a.prod(), lambda: (pos(2, 3),)),
    Case("max_all", lambda a: a.max(), lambda: (r(3, 4),)),
    Case("min_dim", lambda a: a.min(0).values, lambda: (nc(3, 4),)),
    Case("amax", lambda a: a.amax((0, 2)), lambda: (r(2, 3, 2),)),
    Case("var_dim", lambda a: a.var(1), lambda: (r(3, 4),)),
    Case("std_all", lambda a: a.std(), lambda: (r(3, 4),)),
    Case("median_all", lambda a: a.median(), lambda: (r(3, 5),)),
    Case("median_dim", lambda a: a.median(1).values, lambda: (r(3, 5),)),
    Case("kthvalue", lambda a: a.kthvalue(2, 1).values, lambda: (r(3, 4),)),
    Case("mode", lambda a: a.mode(1).values, lambda: (r(3, 4),)),
    Case("logsumexp", lambda a: a.logsumexp(1), lambda: (r(3, 4),)),
    Case("norm_p2", lambda a: torch.norm(a), lambda: (r(3, 4),)),
    Case("norm_p3_dim", lambda a: torch.norm(a, 3, 1), lambda: (r(3, 4),)),
    Case("cumsum", lambda a: a.cumsum(1), lambda: (nc(3, 4),)),
    Case("cumprod", lambda a: a.cumprod(1), lambda: (r(3, 4),)),
    Case("sort", lambda a: a.sort(1).values, lambda: (r(3, 4),)),
    Case("topk", lambda a: a.topk(2).values, lambda: (r(3, 4),)),
    Case("softmax", lambda a: torch.softmax(a, 1), lambda: (r(3, 4),)),
    Case("log_softmax", lambda a: a.log_softmax(0), lambda: (r(3, 4),)),
]

for _family in ("cases_special", "cases_numerical", "cases_attention", "cases_complex",
                "cases_random_distributions", "cases_factorizations"):      # op families with their cases in files of their own
    try:
        CASES += __import__(_family).CASES
    except ModuleNotFoundError as e:
        if e.name != _family:
            raise


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_gradcheck(case):
    assert gradcheck(case.fn, case.make(), **case.tol)


@pytest.mark.parametrize("case", [c for c in CASES if c.second_order], ids=repr)
def test_gradgradcheck(case):
    assert gradgradcheck(case.fn, case.make(), **case.tol)


def _node_names(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    seen, stack = set(), [o.grad_fn for o in outs if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    names = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        names.add(n.name())
        stack.extend(e[0] for e in n.edges if e is not None)
    return names


def test_every_backward_rule_is_covered():
    """Every "XxxBackwardN" node an op can record appears in the graph of some case above."""
    declared = set()
    for path in OPS_DIR.rglob("*.py"):
        declared |= set(re.findall(r'"([A-Z][A-Za-z0-9]*Backward\d+)"', path.read_text()))
    produced = set()
    for case in CASES:
        produced |= _node_names(case.fn(*case.make()))
    missing = sorted(declared - produced)
    assert not missing, f"backward rules without a gradcheck case: {missing}"
