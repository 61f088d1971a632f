"""pluggy hook specifications of the project `tensorplug` (entry-point group `tensorplug`).

A plugin is a module or object with functions marked `@hookimpl`:

    from tensorplug.dispatch import hookimpl

    @hookimpl
    def tensorplug_register_backends(registry):
        registry.add(MyBackend())

Whatever a hook raises (SystemExit included; only KeyboardInterrupt passes) marks its plugin broken,
with the reason, and drops its backends; the other plugins and backends keep working (registry.py).
"""
import pluggy

PROJECT = "tensorplug"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Specs:
    @hookspec
    def tensorplug_register_backends(self, registry):
        """Register compute backends (`registry.add`) and communication backends
        (`registry.add_communication`)."""

    @hookspec(firstresult=True)
    def tensorplug_select_backend(self, device_type, candidates):
        """Return the name of the backend to use for `device_type` among the available
        `candidates` (a list of backends, best priority first), or None to let priority decide.
        Configuration (environment, config file, `use()`) still takes precedence."""

    @hookspec
    def tensorplug_conformance_xfails(self, backend_name):
        """Return conformance check ids expected to fail on `backend_name` (each with a reason:
        a dict {check id: reason})."""
