"""Digits: the 1,797 8x8 UCI handwritten digits that ship with tensorplug (tensorplug.data), as a
dataset with PIL items like MNIST's. No download, no root needed."""
from __future__ import annotations

import numpy as np

from .vision import VisionDataset, pil_image

__all__ = ["Digits"]

TEST_EVERY = 5        # the fixed split: every 5th image of each digit is a test image


def _split_indices(labels: np.ndarray, train):
    if train is None:
        return np.arange(len(labels))
    rank = np.empty(len(labels), dtype=np.int64)            # position of each image among those of its digit
    for digit in range(10):
        where = np.flatnonzero(labels == digit)
        rank[where] = np.arange(len(where))
    test = rank % TEST_EVERY == 0
    return np.flatnonzero(~test if train else test)


class Digits(VisionDataset):
    """The UCI "Optical Recognition of Handwritten Digits" test set (1,797 images of 0-9; source and
    licence in tensorplug/data/DIGITS.md), split the same way every time:

        train=False: 364 test images: of each digit's images, in the file's order, the 1st, 6th,
                     11th, ... (every 5th, starting with the first; 35 to 37 per digit)
        train=True:  the other 1,433 images
        train=None:  all 1,797 in the file's order (for a split of your own)

    Both splits keep the file's order.

    `data` is a uint8 tensor (N, 8, 8) of the original values 0..16, `targets` an int64 tensor (N,),
    `indices` the positions in the file. An item is (PIL image of mode "L", 8x8, int): the pixels are
    scaled to 0..255 as round(v * 255 / 16), so transforms.ToTensor() gives v / 16 to within 1/510.
    `root` is accepted for the datasets' common signature and not used."""

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root=None, train: bool | None = True, transform=None, target_transform=None,
                 download: bool = False):
        import tensorplug
        from tensorplug.data import _read_digits
        super().__init__(root, transform=transform, target_transform=target_transform)
        if train not in (True, False, None):
            raise ValueError(f"train must be True, False or None (all images), got {train!r}")
        self.train = train
        images, labels = _read_digits()
        self.indices = _split_indices(labels, train)
        self.data = tensorplug.from_numpy(np.ascontiguousarray(images[self.indices]))
        self.targets = tensorplug.from_numpy(labels[self.indices].astype(np.int64))
        self._pixels = np.floor(images[self.indices].astype(np.float64) * (255 / 16) + 0.5).astype(np.uint8)

    @property
    def class_to_idx(self) -> dict:
        return {c: i for i, c in enumerate(self.classes)}

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int):
        img = pil_image().fromarray(self._pixels[index])
        return self._apply(img, int(self.targets[index]))

    def extra_repr(self) -> str:
        return f"Split: {'All' if self.train is None else 'Train' if self.train else 'Test'}"
