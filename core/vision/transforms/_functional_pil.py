"""The PIL-image side of transforms.functional: each op is Pillow's own (ImageOps, ImageEnhance,
Image.transform), which is what torchvision runs on PIL images, so results match it pixel for pixel."""
from __future__ import annotations

import numbers

import numpy as np
from PIL import Image, ImageEnhance, ImageOps


def is_pil(img) -> bool:
    return isinstance(img, Image.Image)


def _check(img, fn: str):
    if not is_pil(img):
        raise TypeError(f"{fn}(): img should be PIL Image. Got {type(img)}")


def get_dimensions(img):
    _check(img, "get_dimensions")
    return [len(img.getbands()), img.height, img.width]


def parse_fill(fill, img, name="fillcolor"):
    """Pillow's fill argument: one value per band (ints unless the image is float, mode 'F')."""
    n = len(img.getbands())
    if fill is None:
        fill = 0
    if isinstance(fill, numbers.Number) and n > 1:
        fill = (fill,) * n
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = tuple(fill) * n
        elif len(fill) != n:
            raise ValueError(f"The number of elements in 'fill' does not match the number of channels of the "
                             f"image ({len(fill)} != {n})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(v) for v in fill) if isinstance(fill, tuple) else int(fill)
    return {name: fill}


def pad(img, ltrb, fill=0, padding_mode="constant"):
    """ltrb: [left, top, right, bottom] (negative widths crop)."""
    _check(img, "pad")
    left, top, right, bottom = ltrb
    if padding_mode == "constant" and min(ltrb) >= 0:
        palette = img.getpalette() if img.mode == "P" else None
        out = ImageOps.expand(img, border=tuple(ltrb), **parse_fill(fill, img, "fill"))
        if palette is not None:
            out.putpalette(palette)
        return out
    crop = [max(-v, 0) for v in ltrb]
    if any(crop):
        img = img.crop((crop[0], crop[1], img.width - crop[2], img.height - crop[3]))
    left, top, right, bottom = (max(v, 0) for v in ltrb)
    if padding_mode == "constant":
        return pad(img, [left, top, right, bottom], fill, "constant")
    palette = img.getpalette() if img.mode == "P" else None
    a = np.asarray(img)
    widths = ((top, bottom), (left, right)) + (((0, 0),) if a.ndim == 3 else ())
    out = Image.fromarray(np.pad(a, widths, mode=padding_mode))
    if palette is not None:
        out.putpalette(palette)
    return out


def crop(img, top, left, height, width):
    _check(img, "crop")
    return img.crop((left, top, left + width, top + height))


def resize(img, size_hw, code):
    _check(img, "resize")
    return img.resize((size_hw[1], size_hw[0]), code)


def hflip(img):
    _check(img, "hflip")
    return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)


def vflip(img):
    _check(img, "vflip")
    return img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)


def affine(img, matrix, code, fill):
    _check(img, "affine")
    return img.transform(img.size, Image.Transform.AFFINE, matrix, code, **parse_fill(fill, img))


def rotate(img, angle, code, expand, center, fill):
    _check(img, "rotate")
    return img.rotate(angle, code, expand, center, **parse_fill(fill, img))


def _enhance(cls, img, factor, fn):
    _check(img, fn)
    return cls(img).enhance(factor)


def adjust_brightness(img, f):
    return _enhance(ImageEnhance.Brightness, img, f, "adjust_brightness")


def adjust_contrast(img, f):
    return _enhance(ImageEnhance.Contrast, img, f, "adjust_contrast")


def adjust_saturation(img, f):
    return _enhance(ImageEnhance.Color, img, f, "adjust_saturation")


def adjust_sharpness(img, f):
    return _enhance(ImageEnhance.Sharpness, img, f, "adjust_sharpness")


def adjust_hue(img, hue_factor):
    _check(img, "adjust_hue")
    mode = img.mode
    if mode in ("L", "1", "I", "F"):
        return img
    h, s, v = img.convert("HSV").split()
    nh = np.array(h, dtype=np.uint8)
    nh += np.array(int(hue_factor * 255)).astype(np.uint8)     # hue wraps around modulo 256
    return Image.merge("HSV", (Image.fromarray(nh, "L"), s, v)).convert(mode)


def adjust_gamma(img, gamma, gain=1.0):
    _check(img, "adjust_gamma")
    mode = img.mode
    lut = [int((255 + 1 - 1e-3) * gain * pow(i / 255.0, gamma)) for i in range(256)] * 3
    return img.convert("RGB").point(lut).convert(mode)


def to_grayscale(img, num_output_channels):
    _check(img, "to_grayscale")
    g = img.convert("L")
    if num_output_channels == 1:
        return g
    if num_output_channels == 3:
        a = np.asarray(g)
        return Image.fromarray(np.dstack([a, a, a]), "RGB")
    raise ValueError("num_output_channels should be either 1 or 3")


def invert(img):
    _check(img, "invert")
    return ImageOps.invert(img)


def posterize(img, bits):
    _check(img, "posterize")
    return ImageOps.posterize(img, bits)


def solarize(img, threshold):
    _check(img, "solarize")
    return ImageOps.solarize(img, threshold)


def autocontrast(img):
    _check(img, "autocontrast")
    return ImageOps.autocontrast(img)


def equalize(img):
    _check(img, "equalize")
    return ImageOps.equalize(img)
