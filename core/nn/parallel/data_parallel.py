"""torch.nn.parallel.data_parallel: DataParallel and data_parallel — one process driving several
devices of the machine's accelerator.

    model = nn.DataParallel(model.to("cuda:0"))     # the devices: all of the accelerator's
    out = model(batch)                              # batch split along dim 0, outputs on device 0

Each forward scatters the inputs along `dim` over `device_ids`, replicates the module onto the
devices that got a piece (parameters as differentiable copies: backward adds every replica's
gradient into the original parameters), runs the replicas in parallel threads (parallel_apply) and
gathers the outputs on `output_device`. On a machine without an accelerator DataParallel just calls
the module (device_ids is then []), as PyTorch does without GPUs. For several processes or machines,
DistributedDataParallel is the faster choice.
"""
from __future__ import annotations

from itertools import chain

from ...autograd import grad_mode
from ...device import device as _device
from ..modules.module import Module
from ._devices import accelerator_type, all_device_indices, device_index
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _wrong_device(src, found):
    return (f"module must have its parameters and buffers on device {src} (device_ids[0]) but found one "
            f"of them on device: {found}")


def _first_off_device(module, src):
    for t in chain(module.parameters(), module.buffers()):
        if t.device != src:
            return t.device
    return None


class DataParallel(Module):
    """Data parallelism over the devices of one machine: `module` (which must be on device_ids[0])
    runs on a share of every batch on each of `device_ids` (default: every device of the
    accelerator); the outputs are gathered on `output_device` (default device_ids[0]; -1: the cpu).
    Its state_dict keys carry the prefix "module." (the wrapped module is `.module`)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        device_type = accelerator_type()
        self.dim = dim
        self.module = module
        if device_type is None:
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = all_device_indices()
        if not device_ids:
            raise RuntimeError("no available devices were found")
        if output_device is None:
            output_device = device_ids[0]
        self.device_ids = [device_index(d, "device_ids entry") for d in device_ids]
        self.output_device = device_index(output_device, "output_device", allow_cpu=True)
        self.src_device_obj = _device(device_type, self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        found = _first_off_device(self.module, self.src_device_obj)
        if found is not None:
            raise RuntimeError(_wrong_device(self.src_device_obj, found))
        inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
        if not inputs and not module_kwargs:        # no arguments at all: one call on the first device
            inputs, module_kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module, device_ids):
        return replicate(module, device_ids, not grad_mode.is_grad_enabled())

    def scatter(self, inputs, kwargs, device_ids):
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """module(inputs) evaluated in parallel over `device_ids`, as DataParallel's forward (the
    functional form; it needs an accelerator)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    device_type = accelerator_type()
    if device_type is None:
        raise RuntimeError("device type could not be determined")
    if device_ids is None:
        device_ids = all_device_indices()
    if not device_ids:
        raise RuntimeError("no available devices were found")
    if output_device is None:
        output_device = device_ids[0]
    device_ids = [device_index(d, "device_ids entry") for d in device_ids]
    output_device = device_index(output_device, "output_device", allow_cpu=True)
    src = _device(device_type, device_ids[0])
    found = _first_off_device(module, src)
    if found is not None:
        raise ValueError(_wrong_device(src, found))
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, device_ids, dim)
    if not inputs and not module_kwargs:
        inputs, module_kwargs = ((),), ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = device_ids[:len(inputs)]
    replicas = replicate(module, used)
    outputs = parallel_apply(replicas, inputs, module_kwargs, used)
    return gather(outputs, output_device, dim)
