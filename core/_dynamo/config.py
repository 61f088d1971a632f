"""torch._dynamo.config: the settings of tensorplug.compile that scripts set."""
import os as _os

# compiled entries (distinct guards: shapes, dtypes, modes) one compiled callable keeps; past it, eager
cache_size_limit = 8
recompile_limit = cache_size_limit
# True: every compiled callable runs eagerly (TORCHDYNAMO_DISABLE=1 sets it)
disable = _os.environ.get("TORCHDYNAMO_DISABLE", "") in ("1", "true", "True")
# accepted for scripts that set them; tensorplug.compile specializes on every shape
suppress_errors = False
automatic_dynamic_shapes = True
assume_static_by_default = True
verbose = False
del _os
