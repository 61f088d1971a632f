"""Differentiable collectives (`tensorplug.distributed.nn.functional`), for model parallelism."""
from . import functional  # noqa: F401
from .functional import all_gather, all_reduce, broadcast  # noqa: F401
