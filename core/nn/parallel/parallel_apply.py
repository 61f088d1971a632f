"""torch.nn.parallel.parallel_apply: run modules[i](*inputs[i], **kwargs_tup[i]) for every i, one
thread per module as in PyTorch (a backend kernel that releases the GIL, as NumPy's and CuPy's
large ones do, then overlaps with the others; grad mode and autocast are per thread, so each
worker starts with the caller's; the current device is not switched per thread, being process-wide
here: a replica works on the devices of its inputs and parameters). An exception in a replica is raised again in the caller, of the
same type where possible, naming the replica and its device.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import traceback

from ...amp import state as _amp
from ...autograd import grad_mode
from ...tensor import Tensor
from ._devices import as_device

__all__ = ["parallel_apply", "get_a_var"]


def get_a_var(obj):
    """The first tensor found in obj (a tensor, or lists / tuples / dicts of them), or None."""
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, (list, tuple)):
        for x in obj:
            t = get_a_var(x)
            if t is not None:
                return t
    if isinstance(obj, dict):
        for x in obj.items():
            t = get_a_var(x)
            if t is not None:
                return t
    return None


class _Failure:
    """An exception caught in a worker thread, raised again in the caller."""

    def __init__(self, where, exc=None):
        self.where = where
        self.exc = sys.exc_info()[1] if exc is None else exc
        self.text = "".join(traceback.format_exception(self.exc))

    def reraise(self):
        msg = f"Caught {type(self.exc).__name__} {self.where}.\nOriginal {self.text}"
        try:
            err = type(self.exc)(msg)
        except Exception:                 # an exception type that needs other arguments
            err = RuntimeError(msg)
        raise err from self.exc


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """[modules[i](*inputs[i], **kwargs_tup[i]) for i ...], the calls made in parallel threads.
    An input that is not a list or tuple is the module's single argument."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    if kwargs_tup is None:
        kwargs_tup = ({},) * len(modules)
    elif len(kwargs_tup) != len(modules):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of kwargs "
                             f"{len(kwargs_tup)}")
    if devices is None:
        devices = [None] * len(modules)
    elif len(devices) != len(modules):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of devices "
                             f"{len(devices)}")
    devices = [None if d is None else as_device(d) for d in devices]
    grad_enabled = grad_mode.state.enabled
    results = [None] * len(modules)

    def worker(i, module, args, kwargs, dev):
        grad_mode.state.enabled = grad_enabled
        if dev is None:
            t = get_a_var(args)
            if t is None:
                t = get_a_var(kwargs)
            if t is None:
                results[i] = _Failure(f"in replica {i}, no device was provided and no tensor input was "
                                      f"found; device cannot be resolved", RuntimeError("no device"))
                return
            dev = t.device
        try:
            with autocast_like_caller(dev.type):
                if not isinstance(args, (list, tuple)):
                    args = (args,)
                results[i] = module(*args, **kwargs)
        except Exception:  # noqa: BLE001 - handed to the caller
            results[i] = _Failure(f"in replica {i} on device {dev}")

    # the caller's autocast state, read here (it is per thread) for the device types in play
    found = (get_a_var(a) for a in inputs)
    types = {d.type for d in devices if d is not None} | {t.device.type for t in found if t is not None}
    casting = {dt: _amp.get_autocast_dtype(dt) for dt in types if _amp.is_autocast_enabled(dt)}

    def autocast_like_caller(device_type):
        if device_type not in casting:
            return contextlib.nullcontext()
        from ...amp.autocast_mode import autocast
        return autocast(device_type, dtype=casting[device_type])

    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=(i, m, a, k, d))
                   for i, (m, a, k, d) in enumerate(zip(modules, inputs, kwargs_tup, devices))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    elif modules:
        worker(0, modules[0], inputs[0], kwargs_tup[0], devices[0])
    outputs = []
    for r in results:
        if isinstance(r, _Failure):
            r.reraise()
        outputs.append(r)
    return outputs
