"""Optional kernels of the conv family (specs and decompositions written in required primitives).

Each kernel named in OPTIONAL has a decomposition: a function of the same name here taking the
kernel table K first. A backend may provide the kernel natively instead.
"""
from __future__ import annotations

OPTIONAL: dict[str, str] = {}
