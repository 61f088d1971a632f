"""torch.nn.modules.batchnorm: the batch-norm layers. BatchNorm1d/2d/3d are written in normalization.py
and named here, as in PyTorch, so that pickles of these layers carry PyTorch's path both ways;
SyncBatchNorm, which only this path names, lives here."""
from ...autograd import grad_mode
from ...ops import normalization as F
from . import _functions
from .normalization import _NormBase, _BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]

for _cls in (_NormBase, _BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d):
    _cls.__module__ = __name__
del _cls


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over (N, C, *) input whose training statistics are those of the whole
    batch of the process group (every rank's rows), not of this rank's share.

        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)      # every BatchNorm*d replaced
        ddp = nn.parallel.DistributedDataParallel(model)

    In training, with an initialized process group of more than one process, every rank of
    `process_group` (default: the world) must call forward and backward together. Otherwise (eval
    mode, one process, no process group) it is plain BatchNorm. Unlike PyTorch, CPU tensors are
    synchronized too (the MPI backend works on them). The weight / bias gradients are this rank's;
    DistributedDataParallel averages them like any other parameter's."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        running_mean, running_var, bn_training, factor = self._batch_norm_args()
        group, world_size = self._sync_group() if bn_training and self.training else (None, 1)
        if world_size <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training,
                                factor, self.eps)
        c = input.shape[1]
        if c != self.num_features:
            raise ValueError(f"SyncBatchNorm: expected input's size at dim=1 to match num_features "
                             f"({self.num_features}), but got: {c}.")
        return _functions.SyncBatchNorm.apply(input, self.weight, self.bias, running_mean, running_var,
                                              self.eps, factor, group, world_size)

    def _sync_group(self):
        """(group, its size) to synchronize over; size 1 when there is nothing to synchronize."""
        from ... import distributed as dist   # not at import time: tensorplug stays lean
        if not dist.is_initialized():
            return None, 1
        group = self.process_group if self.process_group is not None else dist.group.WORLD
        return group, dist.get_world_size(group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d layer (itself or any descendant) replaced by a
        SyncBatchNorm over `process_group` that shares its weight, bias and running buffers (so
        requires_grad, device and values carry over) and its training flag."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with grad_mode.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
