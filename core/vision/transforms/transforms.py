"""The classic transform classes (torchvision.transforms.*): thin objects holding arguments, drawing their
random parameters from tensorplug's RNG (so `tensorplug.manual_seed` reproduces them) and calling
transforms.functional. Those that are nn.Modules in torchvision are nn.Modules here, so they nest in
nn.Sequential."""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

import tensorplug as tp
from tensorplug import Tensor
from tensorplug.nn import Module

from . import functional as F
from ._modes import InterpolationMode, as_mode

__all__ = [
    "Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize", "Resize", "CenterCrop",
    "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder", "RandomCrop", "RandomHorizontalFlip",
    "RandomVerticalFlip", "RandomResizedCrop", "FiveCrop", "TenCrop", "ColorJitter", "RandomRotation",
    "RandomAffine", "Grayscale", "RandomGrayscale", "RandomErasing", "GaussianBlur", "InterpolationMode",
    "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness", "RandomAutocontrast",
    "RandomEqualize",
]


def _uniform(lo, hi) -> float:
    return float(tp.empty(1).uniform_(float(lo), float(hi)).item())


def _randint(lo, hi) -> int:
    """An int in [lo, hi)."""
    return int(tp.randint(lo, hi, size=(1,)).item())


def _coin(p) -> bool:
    return bool(tp.rand(1).item() < p)


def _setup_size(size, error_msg):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if not isinstance(size, Sequence) or len(size) != 2:
        raise ValueError(error_msg)
    return size


def _setup_angle(x, name, req_sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-x, x]
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence or a number, got {type(x).__name__}")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {' or '.join(str(s) for s in req_sizes)}.")
    return [float(d) for d in x]


def _check_seq(x, name, sizes=(2,)):
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {' or '.join(str(s) for s in sizes)}.")
    if len(x) not in sizes:
        raise ValueError(f"{name} should be a sequence of length {' or '.join(str(s) for s in sizes)}.")


def _check_fill(fill):
    if fill is None:
        return 0
    if not isinstance(fill, (Sequence, numbers.Number)):
        raise TypeError("Fill should be either a sequence or a number.")
    return fill


def _tensor_fill(img, fill):
    if isinstance(img, Tensor):
        c = F.get_dimensions(img)[0]
        return [float(fill)] * c if isinstance(fill, (int, float)) else [float(f) for f in fill]
    return fill


def _fmt(self, **kw):
    return f"{self.__class__.__name__}(" + ", ".join(f"{k}={v}" for k, v in kw.items()) + ")"


class Compose:
    """Apply transforms in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return self.__class__.__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class ToTensor:
    """PIL image / ndarray (H, W, C) in [0, 255] -> float tensor (C, H, W) in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self):
        return "ToTensor()"


class PILToTensor:
    """PIL image -> tensor (C, H, W) of the same dtype."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return "PILToTensor()"


class ConvertImageDtype(Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class ToPILImage:
    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return f"ToPILImage(mode={self.mode})" if self.mode is not None else "ToPILImage()"


class Normalize(Module):
    """(x - mean) / std per channel."""

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def extra_repr(self):
        return f"mean={self.mean}, std={self.std}"

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Resize(Module):
    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, Sequence)) or isinstance(size, (bool, str)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = as_mode(interpolation)

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return _fmt(self, size=self.size, interpolation=self.interpolation.value, max_size=self.max_size,
                    antialias=self.antialias)


class CenterCrop(Module):
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return _fmt(self, size=self.size)


class Pad(Module):
    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             f"tuple")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return _fmt(self, padding=self.padding, fill=self.fill, padding_mode=self.padding_mode)


class Lambda:
    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return "Lambda()"


class RandomTransforms:
    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class RandomApply(Module):
    """Apply the list of transforms, all of them, with probability p."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, img):
        if self.p < tp.rand(1).item():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(\n    p={self.p}" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class RandomOrder(RandomTransforms):
    """Apply the transforms in a random order."""

    def __call__(self, img):
        for i in tp.randperm(len(self.transforms)).tolist():
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    """Apply one transform picked at random (weights p, default uniform)."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        w = self.p if self.p is not None else [1.0] * len(self.transforms)
        i = int(tp.multinomial(tp.tensor([float(v) for v in w]), 1).item())
        return self.transforms[i](*args)

    def __repr__(self):
        return f"{super().__repr__()}(p={self.p})"


class RandomCrop(Module):
    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = tuple(_setup_size(size, "Please provide only two dimensions (h, w) for size."))
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img, output_size):
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self):
        return _fmt(self, size=self.size, padding=self.padding)


class _RandomOp(Module):
    """Apply the op with probability p."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return self._op(img) if _coin(self.p) else img

    def __repr__(self):
        return _fmt(self, p=self.p)


class RandomHorizontalFlip(_RandomOp):
    def _op(self, img):
        return F.hflip(img)


class RandomVerticalFlip(_RandomOp):
    def _op(self, img):
        return F.vflip(img)


def _random_box(height, width, scale, ratio):
    """A box of area in scale * (height * width) with log-uniform aspect ratio; 10 tries, then the
    central crop of the nearest allowed ratio."""
    area = height * width
    lr0, lr1 = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target = area * _uniform(scale[0], scale[1])
        ar = math.exp(_uniform(lr0, lr1))
        w = int(round(math.sqrt(target * ar)))
        h = int(round(math.sqrt(target / ar)))
        if 0 < w <= width and 0 < h <= height:
            return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


class RandomResizedCrop(Module):
    """A random crop of random area (scale) and aspect ratio, resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        self.interpolation = as_mode(interpolation)
        self.antialias, self.scale, self.ratio = antialias, scale, ratio

    @staticmethod
    def get_params(img, scale, ratio):
        _, h, w = F.get_dimensions(img)
        return _random_box(h, w, scale, ratio)

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return _fmt(self, size=self.size, scale=tuple(round(s, 4) for s in self.scale),
                    ratio=tuple(round(r, 4) for r in self.ratio), interpolation=self.interpolation.value,
                    antialias=self.antialias)


class FiveCrop(Module):
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.five_crop(img, self.size)


class TenCrop(Module):
    def __init__(self, size, vertical_flip=False):
        super().__init__()
        self.size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)


class ColorJitter(Module):
    """Random brightness, contrast, saturation and hue changes, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        order = tp.randperm(4)
        b = None if brightness is None else _uniform(*brightness)
        c = None if contrast is None else _uniform(*contrast)
        s = None if saturation is None else _uniform(*saturation)
        h = None if hue is None else _uniform(*hue)
        return order, b, c, s, h

    def forward(self, img):
        order, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for k in order.tolist():
            if k == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif k == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif k == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif k == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self):
        return _fmt(self, brightness=self.brightness, contrast=self.contrast, saturation=self.saturation,
                    hue=self.hue)


class RandomRotation(Module):
    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        self.interpolation = as_mode(interpolation)
        self.degrees = _setup_angle(degrees, "degrees", (2,))
        if center is not None:
            _check_seq(center, "center")
        self.center, self.expand, self.fill = center, expand, _check_fill(fill)

    @staticmethod
    def get_params(degrees):
        return _uniform(degrees[0], degrees[1])

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        return F.rotate(img, self.get_params(self.degrees), self.interpolation, self.expand, self.center, fill)

    def __repr__(self):
        return _fmt(self, degrees=self.degrees, interpolation=self.interpolation.value, expand=self.expand,
                    fill=self.fill)


class RandomAffine(Module):
    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        self.interpolation = as_mode(interpolation)
        self.degrees = _setup_angle(degrees, "degrees", (2,))
        if translate is not None:
            _check_seq(translate, "translate")
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        if scale is not None:
            _check_seq(scale, "scale")
            if any(s <= 0 for s in scale):
                raise ValueError("scale values should be positive")
        self.translate, self.scale = translate, scale
        self.shear = _setup_angle(shear, "shear", (2, 4)) if shear is not None else None
        self.fill = _check_fill(fill)
        if center is not None:
            _check_seq(center, "center")
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        angle = _uniform(degrees[0], degrees[1])
        if translate is not None:
            dx, dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            translations = (int(round(_uniform(-dx, dx))), int(round(_uniform(-dy, dy))))
        else:
            translations = (0, 0)
        scale = _uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        sx = sy = 0.0
        if shears is not None:
            sx = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                sy = _uniform(shears[2], shears[3])
        return angle, translations, scale, (sx, sy)

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, h, w = F.get_dimensions(img)
        params = self.get_params(self.degrees, self.translate, self.scale, self.shear, [w, h])
        return F.affine(img, *params, interpolation=self.interpolation, fill=fill, center=self.center)

    def __repr__(self):
        return _fmt(self, degrees=self.degrees, translate=self.translate, scale=self.scale, shear=self.shear,
                    interpolation=self.interpolation.value, fill=self.fill)


class Grayscale(Module):
    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)

    def __repr__(self):
        return _fmt(self, num_output_channels=self.num_output_channels)


class RandomGrayscale(Module):
    """Grayscale with probability p, keeping the number of channels."""

    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        c = F.get_dimensions(img)[0]
        return F.rgb_to_grayscale(img, c) if _coin(self.p) else img

    def __repr__(self):
        return _fmt(self, p=self.p)


class RandomErasing(Module):
    """With probability p, erase a random box (area in scale, aspect ratio in ratio) of a tensor image
    with `value` (a number, per-channel values, or 'random' for normal noise)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        c, ih, iw = int(img.shape[-3]), int(img.shape[-2]), int(img.shape[-1])
        area = ih * iw
        lr0, lr1 = math.log(ratio[0]), math.log(ratio[1])
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            ar = math.exp(_uniform(lr0, lr1))
            h = int(round(math.sqrt(erase_area * ar)))
            w = int(round(math.sqrt(erase_area / ar)))
            if not (h < ih and w < iw):
                continue
            if value is None:
                v = tp.empty([c, h, w], dtype=tp.float32).normal_()
            else:
                v = tp.tensor(value)[:, None, None]
            return _randint(0, ih - h + 1), _randint(0, iw - w + 1), h, w, v
        return 0, 0, ih, iw, img

    def forward(self, img):
        if not isinstance(img, Tensor):
            raise TypeError(f"RandomErasing: img should be a Tensor image, got {type(img)} (apply ToTensor first)")
        if _coin(self.p):
            if isinstance(self.value, (int, float)):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = [float(v) for v in self.value]
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError(f"If value is a sequence, it should have either a single value or "
                                 f"{img.shape[-3]} (number of input channels)")
            x, y, h, w, v = self.get_params(img, self.scale, self.ratio, value)
            return F.erase(img, x, y, h, w, v.to(img.dtype) if isinstance(v, Tensor) else v, self.inplace)
        return img

    def __repr__(self):
        return _fmt(self, p=self.p, scale=self.scale, ratio=self.ratio, value=self.value, inplace=self.inplace)


class GaussianBlur(Module):
    """Gaussian blur with sigma drawn uniformly from the range `sigma`."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for k in self.kernel_size:
            if k <= 0 or k % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        s = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, self.kernel_size, [s, s])

    def __repr__(self):
        return _fmt(self, kernel_size=self.kernel_size, sigma=self.sigma)


class RandomInvert(_RandomOp):
    def _op(self, img):
        return F.invert(img)


class RandomPosterize(_RandomOp):
    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits

    def _op(self, img):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomOp):
    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold

    def _op(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomOp):
    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _op(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)


class RandomAutocontrast(_RandomOp):
    def _op(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomOp):
    def _op(self, img):
        return F.equalize(img)
