"""torchvision.transforms.functional: each op takes a PIL image or a (..., C, H, W) tensor and returns the
same kind. PIL images go through Pillow (_functional_pil), tensors through tensorplug ops
(_functional_tensor); this module checks the arguments once and picks the side."""
from __future__ import annotations

import math
import numbers
import sys
import warnings

import numpy as np

import tensorplug as tp
from tensorplug import Tensor

from . import _functional_pil as F_pil
from . import _functional_tensor as F_t
from ._modes import InterpolationMode, as_mode, pil_code

__all__ = [
    "InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels", "to_tensor",
    "pil_to_tensor", "to_pil_image", "convert_image_dtype", "normalize", "resize", "pad", "crop", "center_crop",
    "resized_crop", "hflip", "vflip", "five_crop", "ten_crop", "adjust_brightness", "adjust_contrast",
    "adjust_saturation", "adjust_hue", "adjust_gamma", "adjust_sharpness", "rotate", "affine", "to_grayscale",
    "rgb_to_grayscale", "erase", "gaussian_blur", "invert", "posterize", "solarize", "autocontrast", "equalize",
]


def _is_pil(img) -> bool:
    return "PIL.Image" in sys.modules and F_pil.is_pil(img)


def _kind(img, fn: str) -> bool:
    """True for a tensor, False for a PIL image; anything else is a TypeError naming the function."""
    if isinstance(img, Tensor):
        return True
    if _is_pil(img):
        return False
    raise TypeError(f"{fn}(): img should be PIL Image or Tensor. Got {type(img)}")


# -- introspection ----------------------------------------------------------------------------------------
def get_dimensions(img) -> list:
    """[channels, height, width]."""
    return F_t.get_dimensions(img) if _kind(img, "get_dimensions") else F_pil.get_dimensions(img)


def get_image_size(img) -> list:
    """[width, height]."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img) -> int:
    return get_dimensions(img)[0]


# -- conversion -------------------------------------------------------------------------------------------
def to_tensor(pic) -> Tensor:
    """PIL image or (H, W[, C]) ndarray -> (C, H, W) tensor; uint8 data is scaled to float in [0, 1]."""
    if not (_is_pil(pic) or isinstance(pic, np.ndarray)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        a = pic[:, :, None] if pic.ndim == 2 else pic
        img = tp.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))
    else:
        nptype = {"I": np.int32, "I;16": np.int16, "F": np.float32}.get(pic.mode, np.uint8)
        a = np.array(pic, nptype, copy=True)
        if pic.mode == "1":
            a = 255 * a
        a = a.reshape(pic.height, pic.width, len(pic.getbands()))
        img = tp.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))
    if img.dtype == tp.uint8:
        return img.to(tp.get_default_dtype()).div(255)
    return img


def pil_to_tensor(pic) -> Tensor:
    """PIL image -> (C, H, W) tensor of the same dtype (no scaling)."""
    if not _is_pil(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    a = np.array(pic, copy=True)
    if a.ndim == 2:
        a = a[:, :, None]
    return tp.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


def to_pil_image(pic, mode=None):
    """(C, H, W) tensor or (H, W, C) ndarray -> PIL image; floats are scaled by 255 unless mode='F'."""
    from PIL import Image
    if isinstance(pic, Tensor):
        if pic.ndim == 3:
            pic = pic.permute(1, 2, 0)
        pic = pic.detach().cpu().numpy()
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if pic.ndim == 2:
        pic = pic[:, :, None]
    if pic.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-1]} channels.")
    a = pic
    if np.issubdtype(a.dtype, np.floating) and mode != "F":
        a = (a * 255).astype(np.uint8)
    c = a.shape[2]
    if c == 1:
        a = a[:, :, 0]
        expected = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.int32): "I",
                    np.dtype(np.float32): "F"}.get(a.dtype)
        if mode is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {a.dtype}. Should be {expected}")
        mode = expected
    else:
        allowed = {2: ["LA"], 3: ["RGB", "YCbCr", "HSV"], 4: ["RGBA", "CMYK", "RGBX"]}[c]
        if mode is not None and mode not in allowed:
            raise ValueError(f"Only modes {allowed} are supported for {c}D inputs")
        if mode is None and a.dtype == np.uint8:
            mode = allowed[0]
    if mode is None:
        raise TypeError(f"Input type {a.dtype} is not supported")
    # the bytes are read in `mode` (Pillow's raw decoder), which is what fromarray(a, mode) used to do
    a = np.ascontiguousarray(a)
    return Image.frombytes(mode, (a.shape[1], a.shape[0]), a.tobytes())


def convert_image_dtype(image, dtype=tp.float32):
    """Convert and rescale: uint8 255 <-> float 1.0, integer widths by powers of two."""
    if not isinstance(image, Tensor):
        raise TypeError(f"Input img should be Tensor Image, got {type(image)}")
    return F_t.convert_image_dtype(image, dtype)


def normalize(tensor, mean, std, inplace=False):
    """(x - mean) / std per channel of a float (..., C, H, W) tensor."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    return F_t.normalize(tensor, mean, std, inplace)


# -- geometry ---------------------------------------------------------------------------------------------
def _output_size(h, w, size, max_size):
    if isinstance(size, int):
        size = [size]
    if len(size) == 2:
        return [int(size[0]), int(size[1])]
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = size[0], int(size[0] * long / short)
    if max_size is not None:
        if max_size <= size[0]:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                             f"smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return [new_long, new_short] if w <= h else [new_short, new_long]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to size (h, w), or make the smaller edge `size` keeping the aspect ratio. Tensors are
    antialiased for bilinear/bicubic unless antialias=False; PIL images always are."""
    is_t = _kind(img, "resize")
    interpolation = as_mode(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in (1, 2):
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element "
                             f"tuple/list")
        if max_size is not None and len(size) != 1:
            raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, "
                             "i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    elif not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    _, h, w = get_dimensions(img)
    out = _output_size(h, w, size, max_size)
    if out == [h, w]:
        return img
    if min(out) <= 0:
        raise ValueError(f"resize(): the output size {out} must be positive (input {h}x{w}, size={size})")
    if not is_t:
        if antialias is False:
            warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.")
        return F_pil.resize(img, out, pil_code(interpolation))
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT, InterpolationMode.BILINEAR,
                             InterpolationMode.BICUBIC):
        raise ValueError(f"Interpolation mode '{interpolation.value}' is unsupported with Tensor input")
    return F_t.resize(img, out, interpolation.value, bool(antialias))


def _ltrb(padding):
    if isinstance(padding, numbers.Number) and not isinstance(padding, bool):
        p = int(padding)
        return [p, p, p, p]
    if not isinstance(padding, (list, tuple)):
        raise TypeError(f"Got inappropriate padding arg: {padding!r}")
    if len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if len(padding) == 1:
        return [int(padding[0])] * 4
    if len(padding) == 2:
        return [int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])]
    return [int(v) for v in padding]


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad by padding = p, (left/right, top/bottom) or (left, top, right, bottom); padding_mode constant
    (with fill), edge, reflect or symmetric."""
    is_t = _kind(img, "pad")
    ltrb = _ltrb(padding)
    if fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError(f"Got inappropriate fill arg: {fill!r}")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if is_t:
        if isinstance(fill, (list, tuple)):
            if len(fill) != 1:
                raise TypeError("pad(): a tensor image takes one fill value (int or float), got a sequence")
            fill = fill[0]
        return F_t.pad(img, ltrb, fill, padding_mode)
    return F_pil.pad(img, ltrb, fill, padding_mode)


def crop(img, top, left, height, width):
    """The window at (top, left) of the given size (zero-padded where it leaves the image)."""
    return F_t.crop(img, top, left, height, width) if _kind(img, "crop") else F_pil.crop(img, top, left, height, width)


def _pair(size, name):
    if isinstance(size, numbers.Number):
        return (int(size), int(size))
    if isinstance(size, (list, tuple)) and len(size) == 1:
        return (int(size[0]), int(size[0]))
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return (int(size[0]), int(size[1]))
    raise ValueError(f"Please provide only two dimensions (h, w) for {name}, got {size!r}")


def center_crop(img, output_size):
    """The central window of output_size (h, w); a smaller image is zero-padded first."""
    _kind(img, "center_crop")
    ch, cw = _pair(output_size, "output_size")
    _, h, w = get_dimensions(img)
    if cw > w or ch > h:
        ltrb = [(cw - w) // 2 if cw > w else 0, (ch - h) // 2 if ch > h else 0,
                (cw - w + 1) // 2 if cw > w else 0, (ch - h + 1) // 2 if ch > h else 0]
        img = pad(img, ltrb, fill=0)
        _, h, w = get_dimensions(img)
        if cw == w and ch == h:
            return img
    return crop(img, int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0)), ch, cw)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    return F_t.hflip(img) if _kind(img, "hflip") else F_pil.hflip(img)


def vflip(img):
    return F_t.vflip(img) if _kind(img, "vflip") else F_pil.vflip(img)


def five_crop(img, size):
    """The four corner crops and the centre crop."""
    _kind(img, "five_crop")
    ch, cw = _pair(size, "size")
    _, h, w = get_dimensions(img)
    if cw > w or ch > h:
        raise ValueError(f"Requested crop size {(ch, cw)} is bigger than input size {(h, w)}")
    return (crop(img, 0, 0, ch, cw), crop(img, 0, w - cw, ch, cw), crop(img, h - ch, 0, ch, cw),
            crop(img, h - ch, w - cw, ch, cw), center_crop(img, [ch, cw]))


def ten_crop(img, size, vertical_flip=False):
    """five_crop of the image and of its horizontal (or vertical) flip."""
    size = _pair(size, "size")
    first = five_crop(img, size)
    return first + five_crop(vflip(img) if vertical_flip else hflip(img), size)


def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    """The 2x3 matrix (as 6 floats) of rotation by `angle` and shear (degrees) and scale about `center`,
    then translation; inverted=True gives the output->input map that Pillow and grid_sample need."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    # RSS = rotation . shear-y . shear-x, in closed form
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [v / scale for v in (d, -b, 0.0, -c, a, 0.0)]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    else:
        m = [v * scale for v in (a, b, 0.0, c, d, 0.0)]
        m[2] += m[0] * -cx + m[1] * -cy + cx + tx
        m[5] += m[3] * -cx + m[4] * -cy + cy + ty
    return m


def _tensor_fill(fill, channels):
    if fill is None:
        return None
    if isinstance(fill, (int, float)):
        return [float(fill)] * channels
    return [float(v) for v in fill]


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Rotate counter-clockwise by `angle` degrees about `center` (default: the image centre)."""
    is_t = _kind(img, "rotate")
    interpolation = as_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    if not is_t:
        return F_pil.rotate(img, angle, pil_code(interpolation), expand, center, fill)
    cf = [0.0, 0.0]
    if center is not None:
        _, h, w = get_dimensions(img)
        cf = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    matrix = _get_inverse_affine_matrix(cf, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return F_t.rotate(img, matrix, interpolation.value, expand, fill)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """Rotation (degrees), translation (pixels), scale and shear (degrees, one value or (x, y)) about the
    centre, keeping the image size."""
    is_t = _kind(img, "affine")
    interpolation = as_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _, h, w = get_dimensions(img)
    if not is_t:
        c = [w * 0.5, h * 0.5] if center is None else center
        matrix = _get_inverse_affine_matrix(c, float(angle), list(translate), scale, shear)
        return F_pil.affine(img, matrix, pil_code(interpolation), fill)
    cf = [0.0, 0.0] if center is None else [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    matrix = _get_inverse_affine_matrix(cf, float(angle), [1.0 * t for t in translate], scale, shear)
    return F_t.affine(img, matrix, interpolation.value, fill)


# -- colour -----------------------------------------------------------------------------------------------
def _nonneg(value, name):
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")


def adjust_brightness(img, brightness_factor):
    _nonneg(brightness_factor, "brightness_factor")
    if _kind(img, "adjust_brightness"):
        return F_t.adjust_brightness(img, brightness_factor)
    return F_pil.adjust_brightness(img, brightness_factor)


def adjust_contrast(img, contrast_factor):
    _nonneg(contrast_factor, "contrast_factor")
    if _kind(img, "adjust_contrast"):
        return F_t.adjust_contrast(img, contrast_factor)
    return F_pil.adjust_contrast(img, contrast_factor)


def adjust_saturation(img, saturation_factor):
    _nonneg(saturation_factor, "saturation_factor")
    if _kind(img, "adjust_saturation"):
        return F_t.adjust_saturation(img, saturation_factor)
    return F_pil.adjust_saturation(img, saturation_factor)


def adjust_hue(img, hue_factor):
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    return F_t.adjust_hue(img, hue_factor) if _kind(img, "adjust_hue") else F_pil.adjust_hue(img, hue_factor)


def adjust_gamma(img, gamma, gain=1):
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    if _kind(img, "adjust_gamma"):
        return F_t.adjust_gamma(img, gamma, gain)
    return F_pil.adjust_gamma(img, gamma, gain)


def adjust_sharpness(img, sharpness_factor):
    _nonneg(sharpness_factor, "sharpness_factor")
    if _kind(img, "adjust_sharpness"):
        return F_t.adjust_sharpness(img, sharpness_factor)
    return F_pil.adjust_sharpness(img, sharpness_factor)


def rgb_to_grayscale(img, num_output_channels=1):
    if _kind(img, "rgb_to_grayscale"):
        return F_t.rgb_to_grayscale(img, num_output_channels)
    return F_pil.to_grayscale(img, num_output_channels)


def to_grayscale(img, num_output_channels=1):
    """PIL images: Pillow's 'L' conversion; tensors: the same luma weights."""
    return rgb_to_grayscale(img, num_output_channels)


def invert(img):
    return F_t.invert(img) if _kind(img, "invert") else F_pil.invert(img)


def posterize(img, bits):
    if not isinstance(bits, int) or isinstance(bits, bool) or not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    return F_t.posterize(img, bits) if _kind(img, "posterize") else F_pil.posterize(img, bits)


def solarize(img, threshold):
    return F_t.solarize(img, threshold) if _kind(img, "solarize") else F_pil.solarize(img, threshold)


def autocontrast(img):
    return F_t.autocontrast(img) if _kind(img, "autocontrast") else F_pil.autocontrast(img)


def equalize(img):
    return F_t.equalize(img) if _kind(img, "equalize") else F_pil.equalize(img)


def gaussian_blur(img, kernel_size, sigma=None):
    """Blur with a Gaussian of kernel_size (odd, (x, y)) and sigma (default 0.3 * ((k - 1) * 0.5 - 1) + 0.8,
    i.e. k * 0.15 + 0.35); borders reflect. PIL images are blurred as uint8 tensors and converted back."""
    is_t = _kind(img, "gaussian_blur")
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for k in kernel_size:
        if k % 2 == 0 or k < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    if any(s <= 0.0 for s in sigma):
        raise ValueError(f"sigma should have positive values. Got {sigma}")
    if is_t:
        return F_t.gaussian_blur(img, list(kernel_size), [float(s) for s in sigma])
    out = F_t.gaussian_blur(pil_to_tensor(img), list(kernel_size), [float(s) for s in sigma])
    return to_pil_image(out, mode=img.mode)


def erase(img, i, j, h, w, v, inplace=False):
    """Set the (h, w) window at (i, j) of a tensor image to v."""
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    return F_t.erase(img, i, j, h, w, v, inplace)
