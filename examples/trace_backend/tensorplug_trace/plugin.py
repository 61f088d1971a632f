"""The plugin module named by this package's `tensorplug` entry point."""
from tensorplug.dispatch import hookimpl

from .backend import TraceBackend


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(TraceBackend())
