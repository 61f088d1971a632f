"""torch.nn.parallel.replicate: copies of a module, one per device, for DataParallel.

A replica shares everything with the original except its parameters and buffers, which are
tensors on its device: parameters as differentiable copies (not leaves; the gradient of a copy
flows back into the original parameter, so the replicas' gradients add up there), buffers as
detached copies (unless they require grad). On the first device the replica holds aliases of the
original tensors, so in-place updates there (BatchNorm's running stats) land in the original, as
PyTorch documents. Parameters of a replica are plain attributes: replica.parameters() is empty.
"""
from __future__ import annotations

from ._devices import as_device

__all__ = ["replicate"]


def _replica_of(module):
    """A shallow copy of one module: same attributes, its own (empty) parameter dict and its own
    buffer and child dicts (filled by replicate)."""
    replica = module.__class__.__new__(module.__class__)
    d = module.__dict__.copy()
    d["_parameters"] = {}
    d["_buffers"] = dict(d["_buffers"])
    d["_modules"] = dict(d["_modules"])
    d["_is_replica"] = True
    object.__setattr__(replica, "__dict__", d)
    return replica


def _copies(tensors, devices, detach):
    """copies[j][i]: tensors[i] on devices[j] (on devices[0] if it is there already: an alias)."""
    out = []
    for dev in devices:
        row = []
        for t in tensors:
            c = t.view(tuple(t.shape)) if t.device == dev else t.to(dev)
            row.append(c.detach() if detach else c)
        out.append(row)
    return out


def replicate(network, devices, detach=False):
    """A list of len(devices) copies of `network`, the j-th with its parameters and buffers on
    devices[j] (indices of the accelerator or devices). detach=True: copies cut from the graph."""
    if not devices:
        return []
    devices = [as_device(d) for d in devices]
    params = list(network.parameters())
    param_index = {id(p): i for i, p in enumerate(params)}
    param_copies = _copies(params, devices, detach)
    buffers = list(network.buffers())
    buffer_index = {id(b): i for i, b in enumerate(buffers)}
    buffer_copies = [[c if b.requires_grad else c.detach() for c, b in zip(row, buffers)]
                     for row in _copies(buffers, devices, detach)]
    modules = list(network.modules())
    module_index = {id(m): i for i, m in enumerate(modules)}
    copies = [[_replica_of(m) for m in modules] for _ in devices]
    for j in range(len(devices)):
        for i, module in enumerate(modules):
            replica = copies[j][i]
            for key, child in module._modules.items():
                replica._modules[key] = None if child is None else copies[j][module_index[id(child)]]
            for key, p in module._parameters.items():
                # not a Parameter (a copy is no leaf): a plain attribute, found before __getattr__
                replica.__dict__[key] = None if p is None else param_copies[j][param_index[id(p)]]
            for key, b in module._buffers.items():
                replica._buffers[key] = None if b is None else buffer_copies[j][buffer_index[id(b)]]
    return [row[0] for row in copies]
