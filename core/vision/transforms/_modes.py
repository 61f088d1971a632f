"""InterpolationMode: the resampling filters, by name, with their Pillow constants."""
from __future__ import annotations

from enum import Enum


class InterpolationMode(Enum):
    """Resampling filter for resize/rotate/affine. Tensors support NEAREST, NEAREST_EXACT, BILINEAR and
    BICUBIC (rotate/affine: NEAREST and BILINEAR); PIL images also BOX, HAMMING and LANCZOS."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


# Pillow's integer filter codes (Image.Resampling), so the values work without importing Pillow
_PIL_CODES = {InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.BILINEAR: 2,
              InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5,
              InterpolationMode.LANCZOS: 1}
_FROM_INT = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
             4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}


def pil_code(mode: InterpolationMode) -> int:
    return _PIL_CODES[mode]


def as_mode(interpolation, arg: str = "interpolation") -> InterpolationMode:
    """An InterpolationMode from a mode, a Pillow integer constant or a mode's value string."""
    if isinstance(interpolation, InterpolationMode):
        return interpolation
    if isinstance(interpolation, int) and not isinstance(interpolation, bool) and interpolation in _FROM_INT:
        return _FROM_INT[interpolation]
    if isinstance(interpolation, str):
        for m in InterpolationMode:
            if m.value == interpolation:
                return m
    raise TypeError(f"Argument {arg} should be a InterpolationMode or a corresponding Pillow integer constant, "
                    f"got {interpolation!r}")
