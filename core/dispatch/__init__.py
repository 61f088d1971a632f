"""Backend dispatch: the SPI, pluggy hooks, and the registry that selects backends."""
from .backend_api import API_VERSION, OPTIONAL, REQUIRED, Backend, CommunicationBackend
from .hookspecs import hookimpl, hookspec
from .kernel_check import KernelContractError
from .registry import registry

__all__ = ["API_VERSION", "REQUIRED", "OPTIONAL", "Backend", "CommunicationBackend", "hookimpl",
           "hookspec", "registry", "KernelContractError"]
