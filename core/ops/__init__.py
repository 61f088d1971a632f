"""Every op, defined once, grouped by family. Importing a family attaches its Tensor methods."""
from . import (creation, indexing, introspection, linalg, numerical, pointwise, random, reduction, shape,  # noqa: F401
               special, view_inplace)
