"""Built-in backends, the user-facing registry API (`tensorplug.backends.use(...)`), and PyTorch's
flag modules (`tensorplug.backends.cudnn.benchmark = True`, ...).

Two kinds of modules live here, kept apart by name:
- compute / communication plugins: the packages `*_backend/` and `mpi_dist/`;
- PyTorch's `torch.backends.X` flag modules: the plain files cuda.py, cudnn.py, mps.py, mkldnn.py and
  openmp.py, loaded on first use (`tensorplug.backends.cudnn` works without importing it).
"""
from tensorplug.dispatch.registry import registry

_FLAG_MODULES = ("cuda", "cudnn", "mps", "mkldnn", "openmp")


def __getattr__(name):
    if name in _FLAG_MODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def use(name: str, device_type: str | None = None) -> None:
    """Select compute backend `name` for its device type (overrides environment and config file)."""
    registry.use(name, device_type)


def reset() -> None:
    """Forget every `use()` choice; selection falls back to configuration and priority."""
    registry.reset_selection()


def get(name: str):
    """The registered backend called `name` (KeyError naming the known ones otherwise)."""
    return registry.get(name)


def selected(device_type: str = "cpu"):
    """The backend currently serving `device_type`."""
    return registry.backend_for(device_type)


def register_plugin(plugin, name: str | None = None):
    """Register a pluggy plugin (module or object with hookimpls) at run time."""
    return registry.register_plugin(plugin, name)


def unregister_plugin(name: str) -> None:
    registry.unregister_plugin(name)


def list_backends() -> list:
    """Every registered backend, compute then communication."""
    registry.ensure_loaded()
    return [*registry.compute.values(), *registry.communication.values()]
