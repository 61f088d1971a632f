"""The MPI communication backend ("mpi"): collectives on backend arrays through mpi4py.

Registered through the same `tensorplug_register_backends` hook a third-party plugin uses. Importing
this module is cheap: mpi4py's `MPI` module (which loads and initializes the MPI library) is imported
only when a process group is created. See `backend.py` for the communication SPI it implements.
"""
from tensorplug.dispatch import hookimpl

from .backend import MpiBackend, MpiRequest

__all__ = ["MpiBackend", "MpiRequest"]


@hookimpl
def tensorplug_register_backends(registry):
    registry.add_communication(MpiBackend())
