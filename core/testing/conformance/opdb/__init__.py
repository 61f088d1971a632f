"""The op database: one record per backend kernel (every REQUIRED primitive and OPTIONAL kernel of
`tensorplug.dispatch.backend_api`), grouped by family in the modules of this package.

Adding a kernel to the SPI means adding a record here (a meta-test fails otherwise): an `OpRecord`
with the kernel's dtypes, a sample generator, a float64 NumPy reference and, where the frontend
validates arguments, `ErrorCase`s. See `_base.py` for the fields and helpers.
"""
from ._base import RECORDS, A, ErrorCase, OpRecord, Raw, Sample, register  # noqa: F401
from . import creation, indexing, linalg, movement, optional, pointwise, random, reduction  # noqa: F401,E402
from . import nn  # noqa: F401,E402
from . import complex, fft  # noqa: F401,E402
from . import linalg_factor  # noqa: F401,E402
from . import vision  # noqa: F401,E402
from . import sparse  # noqa: F401,E402
from . import random_distributions  # noqa: F401,E402
from . import transformer  # noqa: F401,E402
from . import rnn  # noqa: F401,E402
from . import attention  # noqa: F401,E402
from . import loss_fused  # noqa: F401,E402
from . import optim  # noqa: F401,E402

__all__ = ["RECORDS", "OpRecord", "Sample", "A", "Raw", "ErrorCase", "register"]
