"""Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm,
LocalResponseNorm (over tensorplug.ops.normalization)."""
from __future__ import annotations

import numbers

from ... import dtypes as _dt
from ...ops import normalization as F
from ...ops.creation import empty, ones, tensor, zeros
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LayerNorm", "GroupNorm", "LocalResponseNorm", "RMSNorm"]


def _per_channel_affine(module, channels, affine, bias, device, dtype):
    """weight (and bias unless bias=False) of `channels` values when affine; None otherwise."""
    module.register_parameter("weight", Parameter(empty(channels, device=device, dtype=dtype)) if affine else None)
    module.register_parameter("bias", Parameter(empty(channels, device=device, dtype=dtype))
                              if affine and bias else None)


def _reset_per_channel_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Per-channel affine parameters (weight = 1, bias = 0) and running statistics
    (running_mean = 0, running_var = 1, num_batches_tracked = 0) shared by BatchNorm and InstanceNorm."""

    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _per_channel_affine(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_per_channel_affine(self)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                    else tensor(0, dtype=_dt.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        running_mean, running_var, bn_training, factor = self._batch_norm_args()
        return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, factor,
                            self.eps)

    def _batch_norm_args(self):
        """(running_mean, running_var, use batch statistics, momentum factor) for this call, counting
        the batch in num_batches_tracked when training."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:          # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return (self.running_mean if use_running else None, self.running_var if use_running else None,
                bn_training, factor)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input: per channel, normalize with the batch's
    statistics in training (updating the running ones) and with the running ones in eval."""

    def _check_input_dim(self, input):
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) input."""

    def _check_input_dim(self, input):
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) input."""

    def _check_input_dim(self, input):
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")


class _InstanceNorm(_NormBase):
    _batched_ndim = 3

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        nd = self._batched_ndim
        if input.ndim not in (nd - 1, nd):
            raise ValueError(f"expected {nd - 1}D or {nd}D input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.ndim == self._batched_ndim - 1
        if unbatched:
            input = input.unsqueeze(0)
        c = input.shape[1]
        if c != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), "
                             f"but got: {c}.")
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or (C, L) input (affine and running stats off by default)."""
    _batched_ndim = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or (C, H, W) input."""
    _batched_ndim = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or (C, D, H, W) input."""
    _batched_ndim = 5


def _trailing_affine(module, normalized_shape, eps, elementwise_affine, names, device, dtype):
    """The attributes of a norm over the trailing dims: normalized_shape, eps, elementwise_affine, and
    the parameters `names` of that shape (registered as None without elementwise_affine)."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    module.normalized_shape = tuple(normalized_shape)
    module.eps = eps
    module.elementwise_affine = elementwise_affine
    for name in names:
        if elementwise_affine:
            setattr(module, name, Parameter(empty(module.normalized_shape, device=device, dtype=dtype)))
        else:
            module.register_parameter(name, None)


class LayerNorm(Module):
    """Normalize over the last dims (normalized_shape) of each sample; elementwise affine
    weight (ones) and bias (zeros) of that shape."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        _trailing_affine(self, normalized_shape, eps, elementwise_affine, ("weight", "bias") if bias else ("weight",),
                         device, dtype)
        if "bias" not in self._parameters:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalize each sample's num_groups groups of channels; per-channel affine weight (ones)
    and bias (zeros)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _per_channel_affine(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_per_channel_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last dims (normalized_shape), times an elementwise weight
    (ones); eps None: the input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        _trailing_affine(self, normalized_shape, eps, elementwise_affine, ("weight",), device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
