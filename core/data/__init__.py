"""Small data sets that ship with tensorplug (no download needed).

    from tensorplug.data import load_digits
    images, labels = load_digits()      # float32 (1797, 1, 8, 8) in [0, 1], int64 (1797,)

`load_digits` is the UCI "Optical Recognition of Handwritten Digits" test set (E. Alpaydin,
C. Kaynak, 1998; CC BY 4.0): 1,797 8x8 images of the digits 0-9, each pixel a count 0..16 of the
"on" pixels in a 4x4 block of a 32x32 bitmap. Source, citation and licence: DIGITS.md next to
this file.
"""
from __future__ import annotations

import os

import numpy as np

__all__ = ["load_digits", "digits_path", "DIGITS_CLASSES"]

DIGITS_CLASSES = tuple(range(10))
_N, _SIZE, _MAX = 1797, 8, 16


def digits_path() -> str:
    """Path of the shipped file `digits.npz` (arrays `images` uint8 (1797, 8, 8), `labels` uint8)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "digits.npz")


def _read_digits() -> tuple[np.ndarray, np.ndarray]:
    with np.load(digits_path(), allow_pickle=False) as f:
        images, labels = f["images"], f["labels"]
    if images.shape != (_N, _SIZE, _SIZE) or labels.shape != (_N,) or images.max() > _MAX or labels.max() > 9:
        raise RuntimeError(f"{digits_path()} is damaged: images {images.shape}, labels {labels.shape}")
    return images, labels


def load_digits(*, raw: bool = False, device=None):
    """The 1,797 handwritten digits as tensors `(images, labels)`.

    Default: images float32 of shape (1797, 1, 8, 8) scaled to [0, 1] (pixel / 16, with a channel
    dimension, ready for `nn.Conv2d(1, ...)`), labels int64 of shape (1797,) with values 0..9.
    raw=True: images uint8 (1797, 8, 8) with the original values 0..16, labels uint8.
    device: where to put the tensors (default: the cpu).
    The order is the file's order (not shuffled); use `tensorplug.utils.data.random_split` or a
    permutation to split it."""
    import tensorplug
    images, labels = _read_digits()
    if raw:
        x, y = tensorplug.from_numpy(images.copy()), tensorplug.from_numpy(labels.copy())
    else:
        x = tensorplug.from_numpy((images.astype(np.float32) / _MAX)[:, None])
        y = tensorplug.from_numpy(labels.astype(np.int64))
    if device is not None:
        x, y = x.to(device), y.to(device)
    return x, y
