"""The autocast op lists of PyTorch, per device type: which listed op runs in which dtype.

An op that reads the autocast flag (see state.py) names itself here by its tensorplug name (`mm`,
`conv2d`, `cross_entropy`; a few take PyTorch's kernel name where one function covers several, e.g.
`reflection_pad1d` for `F.pad(mode="reflect")` on 3-D input). Policies:

- LOWER:   floating inputs (not float64) are cast to the device's autocast dtype;
- FP32:    floating inputs (not float64) are cast to float32, unless the call passes `dtype=`;
- PROMOTE: floating inputs (not float64) are cast to the widest of them (float32 if any is float32);
- BANNED:  the op raises (PyTorch's `binary_cross_entropy` under CUDA autocast).

An op that reads the flag but is not listed for the device type runs as without autocast, and so do
the ops it calls (as in PyTorch, where a listed op's kernel runs below the autocast layer; `einsum`
alone, a composite in PyTorch, runs its parts under autocast instead). Entries marked "(by
decomposition)" are ops that PyTorch does not list but that reach a listed op through their
decomposition there, with the same result dtype (e.g. `tensordot` reaches `mm` on the CPU);
tensorplug's decompositions differ, so the tables say it directly. Ops that are a chain of listed
ops in tensorplug too (`chain_matmul`, `linalg.multi_dot`, `matrix_power`) need no entry.
"""
from __future__ import annotations

from .. import dtypes as _dt

LOWER, FP32, PROMOTE, BANNED = "lower", "fp32", "promote", "banned"

_CONV = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")

CPU = {
    **dict.fromkeys(_CONV + (
        "bmm", "mm", "vecdot", "baddbmm", "addmm", "addbmm", "linear", "matmul", "prelu",
        "scaled_dot_product_attention",
        "lstm",                                          # mkldnn_rnn_layer: nn.LSTM's kernel on the CPU
        "tensordot",                                     # (by decomposition: mm)
    ), LOWER),
    **dict.fromkeys((
        "avg_pool3d", "binary_cross_entropy", "grid_sample", "prod", "quantile", "nanquantile", "cdist",
        "trace", "inverse", "solve", "max_pool3d", "max_unpool2d", "max_unpool3d",
        "adaptive_avg_pool3d", "adaptive_max_pool3d", "reflection_pad1d", "reflection_pad2d",
        "replication_pad1d", "replication_pad2d", "replication_pad3d", "mse_loss",
        "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss",
        "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss",
        "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "kl_div",
        "multilabel_margin_loss", "binary_cross_entropy_with_logits",
        "local_response_norm",                           # (by decomposition: avg_pool3d)
    ), FP32),
    **dict.fromkeys(("cat", "stack", "index_copy"), PROMOTE),
}

CUDA = {
    **dict.fromkeys(_CONV + (
        "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "vecdot", "linear", "addbmm",
        "baddbmm", "bmm", "lstm_cell", "gru_cell", "rnn_tanh_cell",
        "rnn_relu_cell", "scaled_dot_product_attention",
    ), LOWER),
    **dict.fromkeys((
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
        "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "cosine_similarity",
        "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "kl_div",
        "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
        "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
        "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
        "interpolate",                                   # the upsample_* kernels
        # the ops PyTorch runs in float32 unless they are given dtype= (fp32_set_opt_dtype)
        "prod", "softmax", "log_softmax", "cumprod", "cumsum", "vector_norm", "matrix_norm", "sum",
        "norm",
        "__rtruediv__",                                  # (by decomposition: reciprocal)
        "cross_entropy",                                 # (by decomposition: log_softmax, nll_loss)
    ), FP32),
    **dict.fromkeys(("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sample",
                     "index_put", "tensordot", "scatter_add"), PROMOTE),
    "binary_cross_entropy": BANNED,
}

BCE_BANNED = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.")


class Profile:
    """What autocast knows about one device type: its default and accepted dtypes, its op table, and
    what to say when the device type has no usable backend here."""

    def __init__(self, default, ops, dtypes=None, unavailable=None):
        self._default = default            # a dtype name
        self.ops = ops
        self.dtypes = dtypes               # accepted autocast dtypes by name; None: any
        self.unavailable = unavailable     # the warning when no backend serves the device type

    def default_dtype(self):
        return getattr(_dt, self._default)

    def accepts(self, dtype) -> bool:
        return self.dtypes is None or dtype.name in self.dtypes

    def accepted_names(self):
        return [f"torch.{n}" for n in self.dtypes]


PROFILES = {
    "cpu": Profile("bfloat16", CPU, dtypes=("bfloat16", "float16")),
    "cuda": Profile("float16", CUDA,
                    unavailable="CUDA is not available or torch_xla is imported. Disabling autocast."),
}


def profile(device_type) -> Profile:
    """The profile of `device_type` (RuntimeError when autocast does not support it)."""
    p = PROFILES.get(device_type)
    if p is None:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return p
