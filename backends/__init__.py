"""Built-in backends, and the user-facing registry API (`tensorplug.backends.use(...)`)."""
from tensorplug.dispatch.registry import registry


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
