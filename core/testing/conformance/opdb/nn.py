"""Records of the optional kernels of the conv and norm families (optional_conv, optional_norm)."""
from __future__ import annotations
