"""torch._dynamo: reset, config, counters, explain, and the markers scripts use (see core/compiler/)."""
from . import config, utils
from ..compiler import disable, is_compiling, reset
from ..compiler.explain import explain

__all__ = ["config", "utils", "reset", "disable", "is_compiling", "explain"]
