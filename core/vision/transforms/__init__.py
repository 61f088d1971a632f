"""tensorplug.vision.transforms: torchvision.transforms on tensorplug (PIL images and tensors).

The classes are in transforms.py and autoaugment.py, the functions in functional.py; `v2` (the newer API,
same names plus ToImage / ToDtype / ...) loads on first use."""
from __future__ import annotations

import importlib

from . import functional
from ._modes import InterpolationMode
from .autoaugment import AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _classic

__all__ = list(_classic) + ["AutoAugment", "AutoAugmentPolicy", "RandAugment", "TrivialAugmentWide", "functional",
                            "InterpolationMode"]


def __getattr__(name):
    if name == "v2":
        return importlib.import_module(f"{__name__}.v2")
    raise AttributeError(f"module 'tensorplug.vision.transforms' has no attribute {name!r}")
