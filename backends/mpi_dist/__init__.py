"""The MPI communication backend (registration only; collectives arrive with the distributed issue)."""
from tensorplug.dispatch import CommunicationBackend, hookimpl


class MpiBackend(CommunicationBackend):
    name = "mpi"

    @property
    def version(self):
        """mpi4py's version, or "-" where mpi4py is not installed."""
        try:
            import mpi4py
        except Exception:
            return "-"
        return mpi4py.__version__

    def is_available(self):
        try:
            import mpi4py  # noqa: F401
        except Exception as e:
            return False, f"mpi4py is not importable ({type(e).__name__}: {e}); install tensorplug[mpi]"
        return False, "the MPI collectives of this backend are not implemented yet"


@hookimpl
def tensorplug_register_backends(registry):
    registry.add_communication(MpiBackend())
