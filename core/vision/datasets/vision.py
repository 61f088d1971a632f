"""VisionDataset: the base of the image datasets (root, transforms, repr), and the Pillow import."""
from __future__ import annotations

import os

from ...utils.data import Dataset

__all__ = ["VisionDataset", "StandardTransform", "pil_image"]


def pil_image():
    """PIL.Image, or an ImportError that names the extra which installs Pillow."""
    try:
        from PIL import Image
    except ImportError as e:            # pragma: no cover - Pillow is in the vision extra
        raise ImportError("tensorplug.vision needs Pillow for images: pip install 'tensorplug[vision]'") from e
    return Image


class StandardTransform:
    """Applies `transform` to the input and `target_transform` to the target."""

    def __init__(self, transform=None, target_transform=None):
        self.transform, self.target_transform = transform, target_transform

    def __call__(self, input, target):
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    @staticmethod
    def _lines(transform, head):
        lines = repr(transform).splitlines()
        return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]

    def __repr__(self):
        body = [type(self).__name__]
        if self.transform is not None:
            body += self._lines(self.transform, "Transform: ")
        if self.target_transform is not None:
            body += self._lines(self.target_transform, "Target transform: ")
        return "\n".join(body)


class VisionDataset(Dataset):
    """Base class of the datasets: `root` (str or path, ~ expanded; may be None), and either a joint
    `transforms(input, target)` or the pair `transform` / `target_transform`."""

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        if isinstance(root, (str, os.PathLike)):
            root = os.path.expanduser(root)
        self.root = root
        has_separate = transform is not None or target_transform is not None
        if transforms is not None and has_separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform, self.target_transform = transform, target_transform
        if has_separate:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def _apply(self, img, target):
        if self.transforms is not None:
            return self.transforms(img, target)
        return img, target

    def __repr__(self):
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body += repr(self.transforms).splitlines()
        return "\n".join(["Dataset " + type(self).__name__] + [" " * self._repr_indent + line for line in body])

    def extra_repr(self) -> str:
        return ""
