"""FakeData: random images, the same image for the same index every time."""
from __future__ import annotations

import numpy as np

from .vision import VisionDataset, pil_image

__all__ = ["FakeData"]


class FakeData(VisionDataset):
    """`size` images of `image_size` (C, H, W) with random classes 0..num_classes-1. Item i is drawn
    from a generator seeded with i + random_offset (the global random state is left alone): standard
    normal values, turned into a PIL image as ToPILImage does with floats (x * 255, truncated to
    uint8 modulo 256)."""

    def __init__(self, size: int = 1000, image_size=(3, 224, 224), num_classes: int = 10, transform=None,
                 target_transform=None, random_offset: int = 0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size, self.num_classes = size, num_classes
        self.image_size, self.random_offset = image_size, random_offset

    def __getitem__(self, index: int):
        import tensorplug
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        g = tensorplug.Generator().manual_seed(int(index) + self.random_offset)
        img = tensorplug.randn(*self.image_size, generator=g).numpy()
        target = int(tensorplug.randint(0, self.num_classes, (1,), generator=g)[0])
        pixels = (np.trunc(img * 255).astype(np.int64) & 0xFF).astype(np.uint8)
        pixels = np.ascontiguousarray(np.moveaxis(pixels, 0, -1))
        if pixels.shape[-1] == 1:
            pixels = pixels[..., 0]
        img = pil_image().fromarray(pixels)
        return self._apply(img, target)

    def __len__(self) -> int:
        return self.size
