"""Device indices for DataParallel and its pieces: ints name devices of the machine's accelerator
(the indexed device type tensorplug.accelerator finds through the registry; never a name such as
"cuda"), -1 names the cpu, as in PyTorch's torch.nn.parallel."""
from __future__ import annotations

from ...device import device as _device


def accelerator_type():
    """The accelerator's device type ("cuda", a plugin's "npu", ...), or None on a CPU-only machine."""
    from ... import accelerator
    acc = accelerator.current_accelerator()
    return None if acc is None else acc.type


def all_device_indices():
    """[0, ..., count - 1] of the accelerator, or None without one."""
    from ... import accelerator
    n = accelerator.device_count()
    return list(range(n)) if n else None


def device_index(x, what="device", allow_cpu=False):
    """The index that x (an int, "npu:1", a device) names; -1 for the cpu where allow_cpu."""
    if isinstance(x, bool) or not isinstance(x, (int, str, _device)):
        raise TypeError(f"{what} must be a device index, a device string or a tensorplug.device, got {x!r}")
    if isinstance(x, int):
        return x
    d = _device(x)
    if d.type == "cpu":
        if not allow_cpu:
            raise ValueError(f"Expected a non cpu device, but got: {d} ({what})")
        return -1
    acc = accelerator_type()
    if d.type != acc:
        raise ValueError(f"{what} {d} is not a device of the accelerator ({acc or 'none on this machine'})")
    return 0 if d.index is None else d.index


def as_device(x, device_type=None):
    """The device an index (or device / string) names: -1 the cpu, k device k of `device_type`
    (default: the accelerator's)."""
    if not isinstance(x, int) or isinstance(x, bool):
        return _device(x)
    if x == -1:
        return _device("cpu")
    device_type = device_type or accelerator_type()
    if device_type is None:
        raise RuntimeError(f"device index {x} names an accelerator device, but this machine has no "
                           f"accelerator (pass devices such as 'cpu' instead)")
    return _device(device_type, x)
