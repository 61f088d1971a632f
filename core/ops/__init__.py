"""Every op, defined once, grouped by family. Importing a family attaches its Tensor methods."""
from . import (creation, indexing, linalg, numerical, pointwise, random, reduction, shape, special,  # noqa: F401
               view_inplace)
