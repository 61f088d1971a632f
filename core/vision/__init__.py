"""tensorplug.vision: torchvision's API on tensorplug (`import torchvision` under `tensorplug exec`).

Submodules load on first use, so `import tensorplug.vision` costs little: `datasets`, `transforms`,
`models`, `utils`, `io`, `ops`."""
from __future__ import annotations

import importlib

__version__ = "0.29.1"          # the torchvision release whose API this follows
_SUBMODULES = ("datasets", "transforms", "models", "utils", "io", "ops")
_image_backend = "PIL"


def get_image_backend() -> str:
    """The package used to load images ("PIL")."""
    return _image_backend


def set_image_backend(backend: str) -> None:
    """Choose the image loader; only "PIL" exists here (torchvision's "accimage" is not provided)."""
    global _image_backend
    if backend != "PIL":
        raise ValueError(f"Invalid backend '{backend}'. Options are 'PIL' (accimage is not available)")
    _image_backend = backend


def get_video_backend() -> str:
    return "pyav"


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tensorplug.vision' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
