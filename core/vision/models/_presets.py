"""The inference preset the classification weights name (`Weights.transforms()`): resize the shorter
side, crop the centre, scale to [0, 1] floats, normalize.

It uses tensorplug.vision.transforms.functional when that provides the steps; otherwise the small
resize / crop below run (PIL images through Pillow's bilinear filter, tensors through the same
antialiased triangle filter as two matrix products)."""
import enum

import numpy as np

import tensorplug
from tensorplug import nn

__all__ = ["ImageClassification"]


class _Interp(enum.Enum):
    BILINEAR = "bilinear"


def _interp_default():
    try:
        from tensorplug.vision.transforms import InterpolationMode
        return InterpolationMode.BILINEAR
    except (ImportError, AttributeError):
        return _Interp.BILINEAR


def _functional():
    try:
        from tensorplug.vision.transforms import functional as F
    except ImportError:
        return None
    names = ("resize", "center_crop", "pil_to_tensor", "convert_image_dtype", "normalize")
    return F if all(hasattr(F, n) for n in names) else None


class ImageClassification(nn.Module):
    def __init__(self, *, crop_size: int, resize_size: int = 256, mean=(0.485, 0.456, 0.406),
                 std=(0.229, 0.224, 0.225), interpolation=None, antialias: bool | None = True):
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation if interpolation is not None else _interp_default()
        self.antialias = antialias

    def forward(self, img):
        F = _functional()
        if F is not None:
            img = F.resize(img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias)
            img = F.center_crop(img, self.crop_size)
            if not isinstance(img, tensorplug.Tensor):
                img = F.pil_to_tensor(img)
            img = F.convert_image_dtype(img, tensorplug.float)
            return F.normalize(img, mean=self.mean, std=self.std)
        img = _to_tensor(_resize(img, self.resize_size[0]))
        img = _center_crop(img, self.crop_size[0])
        if img.dtype == tensorplug.uint8:
            img = img.to(tensorplug.float32) / 255.0
        mean = tensorplug.tensor(self.mean, dtype=img.dtype).reshape(-1, 1, 1)
        std = tensorplug.tensor(self.std, dtype=img.dtype).reshape(-1, 1, 1)
        return (img - mean) / std

    def __repr__(self):
        lines = [f"crop_size={self.crop_size}", f"resize_size={self.resize_size}", f"mean={self.mean}",
                 f"std={self.std}", f"interpolation={self.interpolation}"]
        return self.__class__.__name__ + "(\n    " + "\n    ".join(lines) + "\n)"

    def describe(self) -> str:
        return ("Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image tensors. "
                f"The images are resized to ``resize_size={self.resize_size}`` using "
                f"``interpolation={self.interpolation}``, followed by a central crop of "
                f"``crop_size={self.crop_size}``. Finally the values are first rescaled to ``[0.0, 1.0]`` "
                f"and then normalized using ``mean={self.mean}`` and ``std={self.std}``.")


# -- the fallback steps ----------------------------------------------------------------------------
def _out_size(h, w, size):
    short, long = (h, w) if h <= w else (w, h)
    if short == size:
        return h, w
    new_long = int(size * long / short)
    return (size, new_long) if h <= w else (new_long, size)


def _resize(img, size):
    if isinstance(img, tensorplug.Tensor):
        if img.ndim < 3:
            raise TypeError(f"expected a (..., C, H, W) image tensor, got shape {tuple(img.shape)}")
        h, w = img.shape[-2:]
        oh, ow = _out_size(h, w, size)
        if (oh, ow) == (h, w):
            return img
        x = img.to(tensorplug.float64)
        x = tensorplug.matmul(tensorplug.from_numpy(_aa_weights(h, oh)).to(img.device), x)
        x = tensorplug.matmul(x, tensorplug.from_numpy(_aa_weights(w, ow).T.copy()).to(img.device))
        if img.dtype == tensorplug.uint8:
            return x.round().clamp(0, 255).to(tensorplug.uint8)
        return x.to(img.dtype)
    from PIL import Image
    if not isinstance(img, Image.Image):
        raise TypeError(f"img should be a PIL Image or a Tensor, got {type(img).__name__}")
    oh, ow = _out_size(img.height, img.width, size)
    return img if (oh, ow) == (img.height, img.width) else img.resize((ow, oh), Image.BILINEAR)


def _aa_weights(n_in, n_out):
    """(n_out, n_in) float64 rows of the antialiased bilinear (triangle) filter, as Pillow builds them."""
    scale = n_in / n_out
    support = max(scale, 1.0)
    W = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = (i + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        j = np.arange(lo, hi)
        wts = np.maximum(0.0, 1.0 - np.abs((j - center + 0.5) / support))
        total = wts.sum()
        W[i, lo:hi] = wts / total if total else wts
    return W


def _to_tensor(img):
    if isinstance(img, tensorplug.Tensor):
        return img
    a = np.asarray(img)
    a = a[:, :, None] if a.ndim == 2 else a
    return tensorplug.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


def _center_crop(img, size):
    h, w = img.shape[-2:]
    if h < size or w < size:          # pad with zeros to the crop size first, as torchvision does
        ph, pw = max(size - h, 0), max(size - w, 0)
        img = tensorplug.nn.functional.pad(img, (pw // 2, (pw + 1) // 2, ph // 2, (ph + 1) // 2))
        h, w = img.shape[-2:]
    top = int(round((h - size) / 2.0))
    left = int(round((w - size) / 2.0))
    return img[..., top:top + size, left:left + size]


