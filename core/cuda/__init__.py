"""tensorplug.cuda: the CUDA device API of PyTorch, served by whichever backend serves device type
"cuda" (the built-in CuPy backend, or a plugin's that provides the same methods).

    import tensorplug as torch
    if torch.cuda.is_available():
        x = torch.ones(3, device="cuda")            # cuda:0
        torch.cuda.manual_seed_all(0)
        torch.cuda.synchronize()

Importing this module imports no CuPy; asking a question does (through the backend). Without a
usable CUDA backend: is_available() is False, device_count() is 0, the seeding functions and
empty_cache() do nothing and the memory counters read 0 (as in PyTorch), and everything that needs a
device raises RuntimeError with the backend's reason (PyTorch built without CUDA raises AssertionError
there; tensorplug always ships its CUDA backend, like a CUDA build of PyTorch on a machine without GPU).

`tensorplug.cuda.amp` (torch.cuda.amp) will need this module to become a package: move this file to
core/cuda/__init__.py unchanged and add core/cuda/amp.py beside it.
"""
from __future__ import annotations

DEVICE_TYPE = "cuda"

__all__ = ["is_available", "device_count", "current_device", "set_device", "device", "synchronize",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "set_rng_state", "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "reset_peak_memory_stats", "get_device_name", "get_device_capability", "is_bf16_supported",
           "set_allow_tf32", "is_tf32_enabled", "backend"]


def backend(required=True):
    """The backend serving "cuda" (None, or RuntimeError with the reason, when there is none)."""
    from ..dispatch import registry
    try:
        return registry.backend_for(DEVICE_TYPE)
    except RuntimeError:
        if required:
            raise
        return None


def _call(name, *args):
    b = backend()
    fn = getattr(b, name, None)
    if fn is None:
        raise RuntimeError(f"the backend {b.name!r} serving {DEVICE_TYPE!r} does not provide {name}()")
    return fn(*args)


def is_available() -> bool:
    """True when a backend serves "cuda" here and sees at least one device."""
    b = backend(required=False)
    return b is not None and b.device_count() > 0


def device_count() -> int:
    b = backend(required=False)
    return b.device_count() if b is not None else 0


def _index(dev) -> int:
    """The device index of an int, "cuda:N", "cuda" (the current device) or a device object."""
    backend()                           # without a usable backend: RuntimeError with the reason
    if dev is None:
        return current_device()
    if isinstance(dev, bool):
        raise TypeError(f"invalid device {dev!r}")
    if isinstance(dev, int):
        index = dev
    else:
        from ..device import as_device
        d = as_device(dev)
        if d.type != DEVICE_TYPE:
            raise ValueError(f"expected a {DEVICE_TYPE} device, got {d}")
        index = current_device() if d.index is None else d.index
    n = device_count()
    if not 0 <= index < n:
        raise RuntimeError(f"invalid device ordinal {index}: {n} {DEVICE_TYPE} device(s) available")
    return index


def current_device() -> int:
    """The index of the current device (where kernels launched outside a device's tables run)."""
    fn = getattr(backend(), "current_device", None)
    return int(fn()) if fn is not None else 0


def set_device(dev) -> None:
    """Make `dev` (int, "cuda:N" or a device) the current device; a negative index does nothing."""
    if dev is None:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{dev}")
    if isinstance(dev, int) and dev < 0:
        return
    _call("set_device", _index(dev))


class device:
    """Context manager: `with tensorplug.cuda.device(1): ...` makes device 1 current inside."""

    def __init__(self, dev):
        self.index = None if dev is None or (isinstance(dev, int) and dev < 0) else _index(dev)
        self.prev = None

    def __enter__(self):
        if self.index is not None:
            self.prev = current_device()
            set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device(self.prev)
        return False


def synchronize(dev=None) -> None:
    """Wait until every kernel queued on device `dev` (default: the current one) has finished."""
    b = backend()
    fn = getattr(b, "synchronize", None)
    if fn is not None:
        fn(_index(dev))


# -- random numbers ------------------------------------------------------------------------------------
def _generator(index):
    from ..device import device as Device
    from ..ops.random import default_generator
    return default_generator(Device(DEVICE_TYPE, index))


def manual_seed(seed) -> None:
    """Seed the default generator of the current device (ignored without CUDA, as in PyTorch)."""
    seed = int(seed)
    if is_available():
        _generator(current_device()).manual_seed(seed)


def manual_seed_all(seed) -> None:
    """Seed the default generator of every device (ignored without CUDA)."""
    seed = int(seed)
    for i in range(device_count()):
        _generator(i).manual_seed(seed)


def seed() -> None:
    if is_available():
        _generator(current_device()).seed()


def seed_all() -> None:
    import time
    s = int(time.time_ns()) % (2**63)
    manual_seed_all(s)


def initial_seed() -> int:
    return _generator(_index(None)).initial_seed()


def get_rng_state(dev="cuda"):
    return _generator(_index(dev)).get_state()


def set_rng_state(state, dev="cuda") -> None:
    _generator(_index(dev)).set_state(state)


# -- memory and properties -----------------------------------------------------------------------------
def empty_cache() -> None:
    """Return the cached, unused device memory to the driver (no-op without CUDA)."""
    b = backend(required=False)
    fn = getattr(b, "empty_cache", None) if b is not None else None
    if fn is not None:
        fn()


def _memory(name, dev) -> int:
    """A memory counter of the backend (0 without CUDA, as in PyTorch)."""
    if not is_available():
        return 0
    _index(dev)
    return int(_call(name))


def memory_allocated(dev=None) -> int:
    """Bytes held by tensors now (CuPy's memory pool counts all devices together)."""
    return _memory("memory_allocated", dev)


def max_memory_allocated(dev=None) -> int:
    """The peak of memory_allocated() since the last reset_peak_memory_stats() (see the backend for
    when it starts counting)."""
    return _memory("max_memory_allocated", dev)


def memory_reserved(dev=None) -> int:
    """Bytes the caching allocator holds: in use, or freed and kept for reuse."""
    return _memory("memory_reserved", dev)


def reset_peak_memory_stats(dev=None) -> None:
    """Restart the peak that max_memory_allocated() reports from the bytes in use now."""
    _index(dev)
    _call("reset_peak_memory_stats")


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current device can hold bfloat16 tensors: the backend must support the dtype, and
    the device natively computes in it (compute capability 8.0 or newer) unless emulation counts."""
    if not is_available() or "bfloat16" not in backend().dtypes:
        return False
    return including_emulation or get_device_capability()[0] >= 8


def get_device_name(dev=None) -> str:
    return str(_call("device_name", _index(dev)))


def get_device_capability(dev=None) -> tuple:
    return tuple(_call("device_capability", _index(dev)))


def set_allow_tf32(allow: bool) -> None:
    """Let float32 matrix products use TF32 tensor cores (off by default: full float32 precision).
    The same switch as tensorplug.backends.cuda.matmul.allow_tf32."""
    from ..precision import set_cuda_tf32
    set_cuda_tf32(bool(allow))


def _push_tf32(allow: bool) -> None:
    """Hand the TF32 choice (tensorplug.precision) to the backend serving CUDA, if one is usable."""
    b = backend(required=False)
    fn = getattr(b, "set_allow_tf32", None) if b is not None else None
    if fn is not None:
        fn(allow)


def is_tf32_enabled() -> bool:
    b = backend(required=False)
    fn = getattr(b, "tf32_enabled", None) if b is not None else None
    return bool(fn()) if fn is not None else False


def __getattr__(name):
    # tensorplug.cuda.amp (PyTorch's deprecated torch.cuda.amp) loads on first use
    if name == "amp":
        import importlib
        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
