"""Every op, defined once, grouped by family. Importing a family attaches its Tensor methods."""
from . import creation, indexing, linalg, pointwise, random, reduction, shape, view_inplace  # noqa: F401
