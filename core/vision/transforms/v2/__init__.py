"""tensorplug.vision.transforms.v2: torchvision's newer transforms API for plain images.

The transforms are the classic ones (same numerics), made nn.Modules that accept a whole sample: one
image, or any nesting of tuples/lists/dicts holding images and other values (labels, paths). The images
in a sample - PIL images, or the pure tensors when there is no PIL image - are transformed with the same
random parameters; other values pass through unchanged. Added here: ToImage, ToDtype, ToPureTensor,
Identity. Not provided: bounding boxes, masks and videos as typed inputs (tv_tensors), CutMix/MixUp."""
from __future__ import annotations

import tensorplug as tp
from tensorplug import Tensor
from tensorplug.nn import Module

from .. import autoaugment as _aa
from .. import transforms as _classic
from .._modes import InterpolationMode
from ..autoaugment import AutoAugmentPolicy
from . import functional
from ._sample import apply_to_images

__all__ = ["InterpolationMode", "AutoAugmentPolicy", "functional", "Compose", "RandomApply", "RandomChoice",
           "RandomOrder", "ToImage", "ToDtype", "ToPureTensor", "Identity"]


def _wrap(cls):
    """cls as a v2 transform: a Module whose call maps the classic per-image call over a sample."""
    is_module = issubclass(cls, Module)

    def __init__(self, *args, **kwargs):
        if not is_module:
            Module.__init__(self)
        cls.__init__(self, *args, **kwargs)

    def __call__(self, *inputs):
        return apply_to_images(lambda img: cls.__call__(self, img), inputs)

    bases = (cls,) if is_module else (cls, Module)
    return type(cls.__name__, bases, {"__init__": __init__, "__call__": __call__, "__module__": __name__,
                                      "__doc__": cls.__doc__, "__repr__": cls.__repr__})


_PER_IMAGE = [n for n in _classic.__all__ if n not in ("Compose", "RandomApply", "RandomChoice", "RandomOrder",
                                                       "InterpolationMode")]
for _name in _PER_IMAGE:
    globals()[_name] = _wrap(getattr(_classic, _name))
for _name in ("AutoAugment", "RandAugment", "TrivialAugmentWide"):
    globals()[_name] = _wrap(getattr(_aa, _name))
__all__ += _PER_IMAGE + ["AutoAugment", "RandAugment", "TrivialAugmentWide"]


def _run(t, inputs):
    return t(*inputs) if len(inputs) > 1 else t(inputs[0])


class Compose(Module):
    """Apply transforms in order to the whole sample."""

    def __init__(self, transforms):
        super().__init__()
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("Argument transforms should be a sequence of callables")
        if not transforms:
            raise ValueError("Pass at least one transform")
        self.transforms = transforms

    def forward(self, *inputs):
        for t in self.transforms:
            out = _run(t, inputs)
            inputs = out if len(inputs) > 1 else (out,)
        return inputs if len(inputs) > 1 else inputs[0]

    def __repr__(self):
        return self.__class__.__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class RandomApply(Compose):
    """Apply all transforms with probability p, else return the sample unchanged."""

    def __init__(self, transforms, p=0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__(list(transforms))
        self.p = p

    def forward(self, *inputs):
        if tp.rand(1).item() >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return super().forward(*inputs)


class RandomChoice(Module):
    def __init__(self, transforms, p=None):
        super().__init__()
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("Argument transforms should be a sequence of callables")
        if p is None:
            p = [1.0] * len(transforms)
        elif len(p) != len(transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != {len(transforms)}")
        self.transforms, self.p = transforms, [float(v) / sum(p) for v in p]

    def forward(self, *inputs):
        i = int(tp.multinomial(tp.tensor(self.p), 1).item())
        return _run(self.transforms[i], inputs)


class RandomOrder(Module):
    def __init__(self, transforms):
        super().__init__()
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("Argument transforms should be a sequence of callables")
        self.transforms = transforms

    def forward(self, *inputs):
        for i in tp.randperm(len(self.transforms)).tolist():
            out = _run(self.transforms[i], inputs)
            inputs = out if len(inputs) > 1 else (out,)
        return inputs if len(inputs) > 1 else inputs[0]


class Identity(Module):
    def forward(self, *inputs):
        return inputs if len(inputs) > 1 else inputs[0]


class ToImage(Module):
    """PIL image / ndarray (H, W, C) / tensor -> (C, H, W) tensor, dtype unchanged (no scaling)."""

    def forward(self, *inputs):
        return apply_to_images(functional.to_image, inputs)


class ToPureTensor(Module):
    """Image subclasses -> plain tensors (here images are plain tensors already)."""

    def forward(self, *inputs):
        return apply_to_images(lambda x: x, inputs)


class ToDtype(Module):
    """Convert images to dtype; scale=True also rescales the values (uint8 255 <-> float 1.0).
    dtype may be a dict {type or "others": dtype}; plain images use its Tensor / "others" entry."""

    def __init__(self, dtype, scale=False):
        super().__init__()
        if not isinstance(dtype, (dict, tp.dtype)):
            raise ValueError(f"dtype must be a dict or a torch.dtype, but got {type(dtype)} instead")
        self.dtype, self.scale = dtype, scale

    def forward(self, *inputs):
        dt = self.dtype
        if isinstance(dt, dict):
            dt = next((v for k, v in dt.items() if k is not None and k != "others" and isinstance(k, type)
                       and issubclass(k, Tensor)), dt.get("others"))
            if dt is None:
                return inputs if len(inputs) > 1 else inputs[0]
        return apply_to_images(lambda x: functional.to_dtype(x, dt, self.scale), inputs, tensors_only=True)

    def __repr__(self):
        return f"ToDtype(dtype={self.dtype}, scale={self.scale})"
