"""CIFAR10 and CIFAR100: the "python version" batches under root/cifar-10-batches-py (cifar-100-python).

The batches are Python pickles; they are read by an unpickler that builds plain data only (dict,
list, str, bytes, numbers) and NumPy arrays of numbers, and refuses every other global, so a
tampered file cannot run code."""
from __future__ import annotations

import os
import pickle
import urllib.error

import numpy as np

from .utils import check_integrity, download_and_extract_archive, missing_files_error
from .vision import VisionDataset, pil_image

__all__ = ["CIFAR10", "CIFAR100", "load_pickle"]


class RefusedPickle(pickle.UnpicklingError):
    """A pickle asked for something other than plain data."""


def _multiarray():
    try:
        from numpy._core import multiarray          # NumPy 2
    except ImportError:                             # pragma: no cover - NumPy 1
        from numpy.core import multiarray
    return multiarray


def _reconstruct(subtype, shape, dtype):
    np_reconstruct = _multiarray()._reconstruct
    if subtype is not np.ndarray:
        raise RefusedPickle(f"only numpy.ndarray may be rebuilt, not {subtype!r}")
    return np_reconstruct(subtype, shape, dtype)


def _dtype(spec, *args):
    dt = np.dtype(spec, *args)
    if dt.hasobject:
        raise RefusedPickle(f"arrays of Python objects are refused (dtype {spec!r})")
    return dt


def _scalar(dtype, data=None):
    scalar = _multiarray().scalar
    if dtype.hasobject:
        raise RefusedPickle("Python-object scalars are refused")
    return scalar(dtype, data)


def _encode(text, encoding="utf-8"):
    # how protocol-2 pickles written by Python 3 store bytes: _codecs.encode(str, "latin1")
    if not isinstance(text, str) or encoding.replace("-", "").lower() not in ("latin1", "utf8"):
        raise RefusedPickle(f"unexpected _codecs.encode({type(text).__name__}, {encoding!r})")
    return text.encode(encoding)


_ALLOWED = {("_codecs", "encode"): _encode,
            ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
            ("numpy.core.multiarray", "scalar"): _scalar, ("numpy._core.multiarray", "scalar"): _scalar,
            ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): _dtype}


class _DataUnpickler(pickle.Unpickler):
    def __init__(self, f, path):
        super().__init__(f, encoding="latin1")
        self.path = path

    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise RefusedPickle(
                f"{self.path}: refusing to load the global {module}.{name}: a dataset pickle may hold only "
                "plain data (dict, list, str, bytes, numbers) and NumPy arrays") from None


def load_pickle(path: str):
    """The contents of a data-only pickle (CIFAR's batches), read without running any code."""
    try:
        with open(path, "rb") as f:
            return _DataUnpickler(f, path).load()
    except RefusedPickle:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError) as e:
        raise RuntimeError(f"{path}: not a readable CIFAR batch ({type(e).__name__}: {e})") from e


class CIFAR10(VisionDataset):
    """CIFAR-10: root/cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta}.

    `data` is a uint8 NumPy array (N, 32, 32, 3) (HWC), `targets` a list of ints, `classes` the label
    names from the meta file; an item is (PIL RGB image, int). The MD5 of the archive is checked when
    it is downloaded; batches already under root are read as they are (a subset or a copy of your
    own works), and a file that does not parse is named in the error."""

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [["data_batch_1", "c99cafc152244af753f735de768cd75f"],
                  ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
                  ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
                  ["data_batch_4", "634d18415352ddfa80567beed471001a"],
                  ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"]]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}
    _labels_key = "labels"

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        errors = []
        if download:
            errors = self.download()
        if not self._check_integrity():
            files = [name for name, _ in self.train_list + self.test_list] + [self.meta["filename"]]
            raise missing_files_error(type(self).__name__, os.path.join(self.root, self.base_folder), files,
                                      [f"{self.url} (unpacked under {self.root})"], errors)
        chunks, self.targets = [], []
        for name, _ in (self.train_list if train else self.test_list):
            path = os.path.join(self.root, self.base_folder, name)
            entry = load_pickle(path)
            try:
                data = np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
                labels = [int(t) for t in entry[self._labels_key]]
            except (KeyError, ValueError, TypeError) as e:
                raise RuntimeError(f"{path}: not a CIFAR batch: expected 'data' (N x 3072 uint8) and "
                                   f"'{self._labels_key}' ({type(e).__name__}: {e})") from e
            if len(labels) != len(data):
                raise RuntimeError(f"{path}: {len(data)} images but {len(labels)} labels")
            chunks.append(data)
            self.targets.extend(labels)
        self.data = np.ascontiguousarray(np.vstack(chunks).transpose((0, 2, 3, 1)))       # NCHW -> NHWC
        self._load_meta()

    def _load_meta(self) -> None:
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        data = load_pickle(path)
        try:
            self.classes = list(data[self.meta["key"]])
        except (KeyError, TypeError) as e:
            raise RuntimeError(f"{path}: no '{self.meta['key']}' in the meta file") from e
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def _check_integrity(self) -> bool:
        folder = os.path.join(self.root, self.base_folder)
        return all(check_integrity(os.path.join(folder, name))
                   for name, _ in self.train_list + self.test_list + [(self.meta["filename"], None)])

    def download(self) -> list:
        """Fetch and unpack the archive (MD5-checked); returns the errors met (empty on success)."""
        if self._check_integrity():
            return []
        try:
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)
        except (RuntimeError, urllib.error.URLError, OSError) as e:
            return [f"{self.url}: {e}"]
        return []

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        return self._apply(pil_image().fromarray(self.data[index]), self.targets[index])

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: root/cifar-100-python/{train, test, meta}; targets are the fine labels (100 classes)."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
    _labels_key = "fine_labels"
