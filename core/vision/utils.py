"""tensorplug.vision.utils (torchvision.utils): make_grid, save_image.

make_grid is written with tensor ops (new_full, narrow, copy_), so it keeps the input's dtype and
device and gradients flow through it."""
from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["make_grid", "save_image"]


def _normalize_(t, low: float, high: float) -> None:
    t.clamp_(min=low, max=high)
    t.sub_(low).div_(max(high - low, 1e-5))


def make_grid(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False, value_range=None,
              scale_each: bool = False, pad_value: float = 0.0):
    """Lay a batch (B, C, H, W) -- or a list of (C, H, W) images -- out as one image, `nrow` per row,
    `padding` pixels of `pad_value` around each. One-channel images become three-channel; a single
    image is returned as it is (C, H, W). normalize=True maps `value_range` (default: the min and max,
    per image with scale_each=True) to [0, 1] on a copy."""
    import tensorplug as tp
    if not isinstance(tensor, tp.Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, tp.Tensor):
                    raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = tp.stack(tensor, dim=0)
    if tensor.dim() == 2:                       # H x W -> 1 x H x W
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:                       # one image
        if tensor.size(0) == 1:
            tensor = tp.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() != 4:
        raise ValueError(f"make_grid: expected a tensor of 2 to 4 dimensions, got {tensor.dim()} "
                         f"(shape {tuple(tensor.shape)})")
    if tensor.size(1) == 1:
        tensor = tp.cat((tensor, tensor, tensor), 1)

    if normalize is True:
        tensor = tensor.clone()                 # the caller's tensor stays as it was
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

        def norm_range(t):
            if value_range is not None:
                _normalize_(t, value_range[0], value_range[1])
            else:
                _normalize_(t, float(t.min()), float(t.max()))

        if scale_each is True:
            for t in tensor:                    # each image its own range (t is a view of the copy)
                norm_range(t)
        else:
            norm_range(tensor)

    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    nmaps = tensor.size(0)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.size(2) + padding), int(tensor.size(3) + padding)
    grid = tensor.new_full((tensor.size(1), height * ymaps + padding, width * xmaps + padding), pad_value)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        cell = grid.narrow(1, y * height + padding, height - padding).narrow(2, x * width + padding, width - padding)
        cell.copy_(tensor[k])
    return grid


def save_image(tensor, fp, format: str | None = None, **kwargs) -> None:
    """make_grid(tensor, **kwargs) written as an image file (PNG, JPEG, ... from the name or `format`):
    values in [0, 1] scale to 0..255, rounded to nearest and clamped."""
    from .datasets.vision import pil_image
    grid = make_grid(tensor, **kwargs)
    arr = grid.detach().cpu().numpy()
    # grid * 255 + 0.5 in the grid's own dtype, clamped, truncated to uint8: torchvision's rounding
    arr = np.clip(arr * arr.dtype.type(255) + arr.dtype.type(0.5), 0, 255).astype(np.uint8)
    img = pil_image().fromarray(np.ascontiguousarray(np.moveaxis(arr, 0, -1)))
    if isinstance(fp, (str, os.PathLike)) and format is None:
        img.save(os.fspath(fp))
    else:
        img.save(fp, format=format)
