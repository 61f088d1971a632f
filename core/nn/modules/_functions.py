"""torch.nn.modules._functions: the autograd Function behind nn.SyncBatchNorm.

Batch normalization whose statistics cover the whole group's batch. Forward: each rank computes
its count, mean and biased variance per channel; one all_gather brings every rank's to every rank,
and they are combined by the parallel-variance rule (mean of the means weighted by count, plus the
spread of the means), which stays accurate where sum-of-squares minus square-of-sum would cancel.
Backward: the input gradient needs the group's sums of dy and dy * xhat, one all_reduce of 2C
values; the weight / bias gradients stay this rank's own (DistributedDataParallel averages them).
"""
from __future__ import annotations

from ... import dtypes as _dt
from ...autograd import grad_mode
from ...autograd.function import Function, once_differentiable
from ...ops.creation import tensor as _tensor, zeros
from ...ops.shape import cat

__all__ = ["SyncBatchNorm"]


def _layout(x):
    """(reduction axes, per-channel broadcast shape) of an (N, C, *) tensor."""
    nd = x.ndim
    return (0,) + tuple(range(2, nd)), (1, x.shape[1]) + (1,) * (nd - 2)


def _gather_stats(x, c, process_group, world_size):
    """(count, mean, biased var) per channel over every rank's x; count a Python float."""
    from ... import distributed as dist
    axes, bshape = _layout(x)
    n_local = x.numel() // c
    if n_local:
        mean = x.mean(axes)
        xc = x - mean.reshape(bshape)
        var = (xc * xc).mean(axes)
    else:                           # a rank with an empty batch contributes count 0
        mean = zeros(c, dtype=x.dtype, device=x.device)
        var = zeros(c, dtype=x.dtype, device=x.device)
    local = cat([mean, var, _tensor([float(n_local)], dtype=x.dtype, device=x.device)])
    every = zeros((world_size, 2 * c + 1), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(every, local, group=process_group)
    means, variances, counts = every[:, :c], every[:, c:2 * c], every[:, 2 * c:]
    total = float(counts.sum().item())
    if total <= 1:
        raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel when training, got "
                         f"{int(total)} over the {world_size} processes of the group (input size "
                         f"{list(x.shape)} on this one)")
    g_mean = (counts * means).sum(0) / total
    spread = means - g_mean
    g_var = (counts * (variances + spread * spread)).sum(0) / total
    return total, g_mean, g_var


class SyncBatchNorm(Function):
    """y = (x - mean) / sqrt(var + eps) * weight + bias, mean / var over the group's whole batch."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_group,
                world_size):
        c = input.shape[1]
        bshape = _layout(input)[1]
        # half-precision input: statistics, exchange and normalization in float32, as PyTorch
        x = input.float() if input.dtype in (_dt.float16, _dt.bfloat16) else input
        total, mean, var = _gather_stats(x, c, process_group, world_size)
        with grad_mode.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
            if running_var is not None:
                unbiased = var * (total / (total - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        invstd = (var + eps).rsqrt()
        y = (x - mean.reshape(bshape)) * invstd.reshape(bshape)
        if weight is not None:
            y = y * weight.to(y.dtype).reshape(bshape)
        if bias is not None:
            y = y + bias.to(y.dtype).reshape(bshape)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.total = total
        ctx.process_group = process_group
        ctx.world_size = world_size
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y.to(input.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        from ... import distributed as dist
        x, weight, mean, invstd = ctx.saved_tensors
        c = x.shape[1]
        axes, bshape = _layout(x)
        g = grad_output.to(x.dtype)            # (float32 for a half-precision input; cast back by autograd)
        xhat = (x - mean.reshape(bshape)) * invstd.reshape(bshape)
        sum_dy = g.sum(axes)
        sum_dy_xhat = (g * xhat).sum(axes)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        gx = None
        if need_x:
            # every rank's rows moved the shared mean / var: their sums come from the whole group
            both = cat([sum_dy, sum_dy_xhat])
            if ctx.world_size > 1:
                dist.all_reduce(both, group=ctx.process_group)
            scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
            n = ctx.total
            gx = (g - (both[:c] / n).reshape(bshape) - xhat * (both[c:] / n).reshape(bshape)) \
                * scale.reshape(bshape)
        gw = sum_dy_xhat.to(weight.dtype) if need_w else None
        gb = sum_dy.to(ctx.bias_dtype) if need_b else None
        return gx, gw, gb, None, None, None, None, None, None
