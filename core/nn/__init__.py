"""Neural networks: Module, Parameter, layers (`tensorplug.nn.Linear` ...), functional, init, utils."""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from . import parallel  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402
from .parameter import Buffer, Parameter, UninitializedParameter  # noqa: F401
