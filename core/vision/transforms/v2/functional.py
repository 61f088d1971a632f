"""tensorplug.vision.transforms.v2.functional: the classic functional ops under their v2 names, plus
to_image / to_dtype / to_pure_tensor / get_size / grayscale_to_rgb."""
from __future__ import annotations

import numpy as np

import tensorplug as tp
from tensorplug import Tensor

from .. import _functional_pil as F_pil
from ..functional import *  # noqa: F401,F403
from ..functional import __all__ as _classic
from ..functional import convert_image_dtype, get_dimensions, pil_to_tensor

__all__ = list(_classic) + ["to_image", "to_dtype", "to_pure_tensor", "get_size", "get_num_channels",
                            "grayscale_to_rgb", "horizontal_flip", "vertical_flip"]

from ..functional import hflip as horizontal_flip, vflip as vertical_flip  # noqa: E402


def to_image(inpt):
    """PIL image, (H, W[, C]) ndarray or tensor -> (C, H, W) tensor of the same dtype."""
    if isinstance(inpt, np.ndarray):
        a = inpt[:, :, None] if inpt.ndim == 2 else inpt
        if a.ndim != 3:
            raise ValueError(f"to_image(): an ndarray image must be 2- or 3-dimensional, got {inpt.ndim}")
        return tp.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))
    if F_pil.is_pil(inpt):
        return pil_to_tensor(inpt)
    if isinstance(inpt, Tensor):
        return inpt.unsqueeze(0) if inpt.ndim == 2 else inpt
    raise TypeError(f"to_image(): input should be an ndarray, a PIL Image or a Tensor, got {type(inpt)}")


def to_dtype(inpt, dtype=tp.float32, scale=False):
    if not isinstance(inpt, Tensor):
        raise TypeError(f"to_dtype(): input should be a Tensor, got {type(inpt)}")
    return convert_image_dtype(inpt, dtype) if scale else inpt.to(dtype)


def to_pure_tensor(inpt):
    return inpt


def get_size(inpt):
    """[height, width]."""
    _, h, w = get_dimensions(inpt)
    return [h, w]


def get_num_channels(inpt):
    return get_dimensions(inpt)[0]


def grayscale_to_rgb(inpt):
    if F_pil.is_pil(inpt):
        return inpt.convert("RGB")
    if inpt.shape[-3] == 3:
        return inpt
    return inpt.expand(*inpt.shape[:-3], 3, *inpt.shape[-2:])
