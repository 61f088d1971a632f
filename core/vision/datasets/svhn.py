"""SVHN (Street View House Numbers), the cropped-digits .mat files directly under root (needs SciPy)."""
from __future__ import annotations

import os
import urllib.error

import numpy as np

from .utils import check_integrity, download_url, missing_files_error, verify_str_arg
from .vision import VisionDataset, pil_image

__all__ = ["SVHN"]


def _loadmat(path):
    try:
        import scipy.io as sio
    except ImportError as e:
        raise ImportError("SVHN reads .mat files with SciPy: pip install 'tensorplug[vision]' (or scipy)") from e
    try:
        return sio.loadmat(path)
    except Exception as e:              # SciPy raises ValueError, TypeError, MatReadError, ... on bad files
        raise RuntimeError(f"{path}: not a readable MATLAB .mat file ({type(e).__name__}: {e})") from e


class SVHN(VisionDataset):
    """SVHN: root/{train,test,extra}_32x32.mat. `data` is a uint8 NumPy array (N, 3, 32, 32), `labels`
    an int64 array (N,) with the digit 0 stored as 0 (the files say 10); an item is (PIL RGB image, int).
    The MD5 is checked on download; a file already under root is read as it is."""

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        errors = []
        if download:
            errors = self.download()
        if not self._check_integrity():
            raise missing_files_error("SVHN", self.root, [self.filename], [self.url], errors)
        path = os.path.join(self.root, self.filename)
        mat = _loadmat(path)
        try:
            x, y = mat["X"], mat["y"]
        except KeyError as e:
            raise RuntimeError(f"{path}: expected the variables 'X' (32 x 32 x 3 x N) and 'y' (N x 1)") from e
        if x.ndim != 4 or x.shape[2] != 3 or y.size != x.shape[3]:
            raise RuntimeError(f"{path}: 'X' has shape {x.shape} and 'y' {y.shape}; expected (H, W, 3, N) and (N, 1)")
        self.data = np.ascontiguousarray(np.transpose(x.astype(np.uint8), (3, 2, 0, 1)))
        self.labels = y.astype(np.int64).reshape(-1)
        np.place(self.labels, self.labels == 10, 0)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename))

    def download(self) -> list:
        if self._check_integrity():
            return []
        try:
            download_url(self.url, self.root, self.filename, self.file_md5)
        except (RuntimeError, urllib.error.URLError, OSError) as e:
            return [f"{self.url}: {e}"]
        return []

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        img = pil_image().fromarray(np.transpose(self.data[index], (1, 2, 0)))
        return self._apply(img, int(self.labels[index]))

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
