"""Learned and random augmentation policies: AutoAugment (ImageNet, CIFAR10 and SVHN policies), RandAugment,
TrivialAugmentWide. Each applies named ops (_apply_op) at magnitudes taken from a table of bins."""
from __future__ import annotations

import math
from enum import Enum

import numpy as np

import tensorplug as tp
from tensorplug import Tensor
from tensorplug.nn import Module

from . import functional as F
from ._modes import InterpolationMode, as_mode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide"]


def _apply_op(img, op_name, magnitude, interpolation, fill):
    if op_name == "ShearX":        # shear about the top-left corner, as the policies were learned
        return F.affine(img, 0.0, [0, 0], 1.0, [math.degrees(math.atan(magnitude)), 0.0], interpolation, fill,
                        center=[0, 0])
    if op_name == "ShearY":
        return F.affine(img, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(magnitude))], interpolation, fill,
                        center=[0, 0])
    if op_name == "TranslateX":
        return F.affine(img, 0.0, [int(magnitude), 0], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "TranslateY":
        return F.affine(img, 0.0, [0, int(magnitude)], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation, fill=fill)
    enhance = {"Brightness": F.adjust_brightness, "Color": F.adjust_saturation, "Contrast": F.adjust_contrast,
               "Sharpness": F.adjust_sharpness}
    if op_name in enhance:
        return enhance[op_name](img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return F.autocontrast(img)
    if op_name == "Equalize":
        return F.equalize(img)
    if op_name == "Invert":
        return F.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


class AutoAugmentPolicy(Enum):
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# Sub-policies of the AutoAugment paper (Cubuk et al., 2018), written compactly: "Op p m" per op, m the
# magnitude bin (none for ops without magnitude), two ops a sub-policy.
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: """
        Posterize .4 8, Rotate .6 9 | Solarize .6 5, AutoContrast .6 | Equalize .8, Equalize .6 |
        Posterize .6 7, Posterize .6 6 | Equalize .4, Solarize .2 4 | Equalize .4, Rotate .8 8 |
        Solarize .6 3, Equalize .6 | Posterize .8 5, Equalize 1 | Rotate .2 3, Solarize .6 8 |
        Equalize .6, Posterize .4 6 | Rotate .8 8, Color .4 0 | Rotate .4 9, Equalize .6 | Equalize 0, Equalize .8 |
        Invert .6, Equalize 1 | Color .6 4, Contrast 1 8 | Rotate .8 8, Color 1 2 | Color .8 8, Solarize .8 7 |
        Sharpness .4 7, Invert .6 | ShearX .6 5, Equalize 1 | Color .4 0, Equalize .6 | Equalize .4, Solarize .2 4 |
        Solarize .6 5, AutoContrast .6 | Invert .6, Equalize 1 | Color .6 4, Contrast 1 8 | Equalize .8, Equalize .6""",
    AutoAugmentPolicy.CIFAR10: """
        Invert .1, Contrast .2 6 | Rotate .7 2, TranslateX .3 9 | Sharpness .8 1, Sharpness .9 3 |
        ShearY .5 8, TranslateY .7 9 | AutoContrast .5, Equalize .9 | ShearY .2 7, Posterize .3 7 |
        Color .4 3, Brightness .6 7 | Sharpness .3 9, Brightness .7 9 | Equalize .6, Equalize .5 |
        Contrast .6 7, Sharpness .6 5 | Color .7 7, TranslateX .5 8 | Equalize .3, AutoContrast .4 |
        TranslateY .4 3, Sharpness .2 6 | Brightness .9 6, Color .2 8 | Solarize .5 2, Invert 0 |
        Equalize .2, AutoContrast .6 | Equalize .2, Equalize .6 | Color .9 9, Equalize .6 |
        AutoContrast .8, Solarize .2 8 | Brightness .1 3, Color .7 0 | Solarize .4 5, AutoContrast .9 |
        TranslateY .9 9, TranslateY .7 9 | AutoContrast .9, Solarize .8 3 | Equalize .8, Invert .1 |
        TranslateY .7 9, AutoContrast .9""",
    AutoAugmentPolicy.SVHN: """
        ShearX .9 4, Invert .2 | ShearY .9 8, Invert .7 | Equalize .6, Solarize .6 6 | Invert .9, Equalize .6 |
        Equalize .6, Rotate .9 3 | ShearX .9 4, AutoContrast .8 | ShearY .9 8, Invert .4 | ShearY .9 5, Solarize .2 6 |
        Invert .9, AutoContrast .8 | Equalize .6, Rotate .9 3 | ShearX .9 4, Solarize .3 3 | ShearY .8 8, Invert .7 |
        Equalize .9, TranslateY .6 6 | Invert .9, Equalize .6 | Contrast .3 3, Rotate .8 4 | Invert .8, TranslateY 0 2 |
        ShearY .7 6, Solarize .4 8 | Invert .6, Rotate .8 4 | ShearY .3 7, TranslateX .9 3 | ShearX .1 6, Invert .6 |
        Solarize .7 2, TranslateY .6 7 | ShearY .8 4, Invert .8 | ShearX .7 9, TranslateY .8 3 |
        ShearY .8 5, AutoContrast .7 | ShearX .7 2, Invert .1""",
}


def _parse_policy(text):
    out = []
    for sub in text.split("|"):
        ops = []
        for op in sub.split(","):
            parts = op.split()
            ops.append((parts[0], float(parts[1]), int(parts[2]) if len(parts) > 2 else None))
        out.append(tuple(ops))
    return out


def _linspace(a, b, n):
    return [float(v) for v in np.linspace(a, b, n, dtype=np.float32)]


def _posterize_bins(top, n, span):
    return [int(top - round(i / ((n - 1) / span))) for i in range(n)] if n > 1 else [top]


def _space(num_bins, image_size, shear=0.3, translate=None, rotate=30.0, enhance=0.9, post=(8, 4)):
    """Op name -> (magnitude bins, signed), in the order the random policies index them."""
    h, w = image_size
    tx = 150.0 / 331.0 * w if translate is None else translate
    ty = 150.0 / 331.0 * h if translate is None else translate
    return {
        "ShearX": (_linspace(0.0, shear, num_bins), True), "ShearY": (_linspace(0.0, shear, num_bins), True),
        "TranslateX": (_linspace(0.0, tx, num_bins), True), "TranslateY": (_linspace(0.0, ty, num_bins), True),
        "Rotate": (_linspace(0.0, rotate, num_bins), True),
        "Brightness": (_linspace(0.0, enhance, num_bins), True), "Color": (_linspace(0.0, enhance, num_bins), True),
        "Contrast": (_linspace(0.0, enhance, num_bins), True), "Sharpness": (_linspace(0.0, enhance, num_bins), True),
        "Posterize": (_posterize_bins(post[0], num_bins, post[1]), False),
        "Solarize": (_linspace(255.0, 0.0, num_bins), False),
        "AutoContrast": (None, False), "Equalize": (None, False),
    }


def _fill_for(img, fill):
    if isinstance(img, Tensor) and fill is not None:
        c = F.get_dimensions(img)[0]
        return [float(fill)] * c if isinstance(fill, (int, float)) else [float(f) for f in fill]
    return fill


class AutoAugment(Module):
    """Apply one randomly chosen learned sub-policy (two ops, each with its probability and magnitude)."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        if not isinstance(policy, AutoAugmentPolicy):
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy, self.interpolation, self.fill = policy, as_mode(interpolation), fill
        self.policies = _parse_policy(_POLICIES[policy])

    def _augmentation_space(self, num_bins, image_size):
        s = _space(num_bins, image_size)
        s["Invert"] = (None, False)
        return s

    @staticmethod
    def get_params(transform_num):
        return int(tp.randint(transform_num, (1,)).item()), tp.rand((2,)), tp.randint(2, (2,))

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, h, w = F.get_dimensions(img)
        pid, probs, signs = self.get_params(len(self.policies))
        meta = self._augmentation_space(10, (h, w))
        for i, (name, p, mid) in enumerate(self.policies[pid]):
            if probs[i].item() <= p:
                bins, signed = meta[name]
                m = bins[mid] if mid is not None else 0.0
                if signed and int(signs[i].item()) == 0:
                    m = -m
                img = _apply_op(img, name, m, self.interpolation, fill)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(Module):
    """Apply num_ops ops chosen uniformly, all at the same magnitude bin (RandAugment, Cubuk et al., 2019)."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__()
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins
        self.interpolation, self.fill = as_mode(interpolation), fill

    def _augmentation_space(self, num_bins, image_size):
        return {"Identity": (None, False), **_space(num_bins, image_size)}

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, h, w = F.get_dimensions(img)
        meta = self._augmentation_space(self.num_magnitude_bins, (h, w))
        names = list(meta)
        for _ in range(self.num_ops):
            name = names[int(tp.randint(len(meta), (1,)).item())]
            bins, signed = meta[name]
            m = bins[self.magnitude] if bins is not None else 0.0
            if signed and int(tp.randint(2, (1,)).item()):
                m = -m
            img = _apply_op(img, name, m, self.interpolation, fill)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, "
                f"fill={self.fill})")


class TrivialAugmentWide(Module):
    """Apply one op chosen uniformly at a magnitude bin chosen uniformly (TrivialAugment, wide ranges)."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_magnitude_bins, self.interpolation, self.fill = num_magnitude_bins, as_mode(interpolation), fill

    def _augmentation_space(self, num_bins):
        return {"Identity": (None, False),
                **_space(num_bins, (0, 0), shear=0.99, translate=32.0, rotate=135.0, enhance=0.99, post=(8, 6))}

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        meta = self._augmentation_space(self.num_magnitude_bins)
        name = list(meta)[int(tp.randint(len(meta), (1,)).item())]
        bins, signed = meta[name]
        m = bins[int(tp.randint(len(bins), (1,)).item())] if bins is not None else 0.0
        if signed and int(tp.randint(2, (1,)).item()):
            m = -m
        return _apply_op(img, name, m, self.interpolation, fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
