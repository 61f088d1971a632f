"""MNIST and its relatives (FashionMNIST, KMNIST, EMNIST, QMNIST): IDX files under root/<Name>/raw.

The IDX format ("SN3 Pascal Vincent"): a big-endian magic number 0x0000TTNN (TT the element type,
NN the number of dimensions), NN big-endian uint32 sizes, then the elements, big-endian. Files are
read as they are or gzip-compressed (name + ".gz")."""
from __future__ import annotations

import gzip
import os
import string
import urllib.error
import warnings

import numpy as np

from .utils import check_integrity, download_and_extract_archive, extract_archive, missing_files_error, \
    verify_str_arg
from .vision import VisionDataset, pil_image

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST", "read_sn3_pascalvincent_tensor",
           "read_image_file", "read_label_file"]

# IDX element type code -> big-endian NumPy dtype
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def _existing(path: str) -> str:
    """`path`, or `path`.gz when only the compressed file is there."""
    if os.path.isfile(path):
        return path
    if os.path.isfile(path + ".gz"):
        return path + ".gz"
    raise FileNotFoundError(f"No such file: {path!r} (nor {path + '.gz'!r})")


def _idx_array(path: str, strict: bool = True) -> np.ndarray:
    path = _existing(os.fspath(path))
    try:
        with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
            data = f.read()
    except (OSError, EOFError) as e:         # gzip.BadGzipFile and truncated streams land here
        if isinstance(e, FileNotFoundError):
            raise
        raise RuntimeError(f"{path}: cannot read the file ({type(e).__name__}: {e})") from e
    if len(data) < 4:
        raise RuntimeError(f"{path}: not an IDX file (only {len(data)} bytes)")
    zero, kind, nd = int.from_bytes(data[0:2], "big"), data[2], data[3]
    if zero != 0 or kind not in _IDX_TYPES or nd == 0:
        raise RuntimeError(f"{path}: not an IDX file (magic number 0x{int.from_bytes(data[0:4], 'big'):08X}; "
                           f"expected 0x0000TTNN with type TT in "
                           f"{', '.join(f'{t:02X}' for t in _IDX_TYPES)} and NN dimensions > 0)")
    header = 4 * (nd + 1)
    if len(data) < header:
        raise RuntimeError(f"{path}: truncated IDX header ({len(data)} bytes, {header} needed)")
    shape = tuple(int.from_bytes(data[4 * (i + 1): 4 * (i + 2)], "big") for i in range(nd))
    dtype = np.dtype(_IDX_TYPES[kind])
    need = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) < need or (strict and len(data) != need):
        raise RuntimeError(f"{path}: {'truncated' if len(data) < need else 'too long'}: the header says "
                           f"shape {shape} of {dtype.name} ({need} bytes), the file has {len(data)} bytes")
    return np.frombuffer(data, dtype=dtype, count=need // dtype.itemsize - header // dtype.itemsize,
                         offset=header).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def read_sn3_pascalvincent_tensor(path: str, strict: bool = True):
    """An IDX file (plain or .gz) as a tensor of its element type and shape."""
    import tensorplug
    return tensorplug.from_numpy(_idx_array(path, strict))


def _read_checked(path: str, ndim: int, what: str) -> np.ndarray:
    x = _idx_array(path)
    if x.dtype != np.uint8:
        raise TypeError(f"{path}: {what} should be of dtype uint8 (IDX type 0x08) instead of {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{path}: {what} should have {ndim} dimensions instead of {x.ndim} (shape {x.shape})")
    return x


def read_label_file(path: str):
    import tensorplug
    return tensorplug.from_numpy(_read_checked(path, 1, "labels").astype(np.int64))


def read_image_file(path: str):
    import tensorplug
    return tensorplug.from_numpy(_read_checked(path, 3, "images"))


class MNIST(VisionDataset):
    """MNIST: root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte (or the .gz files).

    `data` is a uint8 tensor (N, 28, 28), `targets` an int64 tensor (N,); an item is
    (PIL image of mode "L", int) before the transforms."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    training_file = "training.pt"
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        self._download_errors = []
        if download:
            self.download()
        if not self._check_exists():
            raise missing_files_error(type(self).__name__, self.raw_folder, self._needed_files(),
                                      self._source_urls(), self._download_errors)
        self.data, self.targets = self._load_data()

    # -- files --------------------------------------------------------------------------------------------------
    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def images_file(self) -> str:
        return os.path.join(self.raw_folder, f"{'train' if self.train else 't10k'}-images-idx3-ubyte")

    @property
    def labels_file(self) -> str:
        return os.path.join(self.raw_folder, f"{'train' if self.train else 't10k'}-labels-idx1-ubyte")

    def _files(self):
        return (self.images_file, self.labels_file)

    def _needed_files(self):
        return [os.path.basename(f) + "[.gz]" for f in self._files()]

    def _source_urls(self):
        return list(self.mirrors)

    def _check_exists(self) -> bool:
        return all(check_integrity(f) or check_integrity(f + ".gz") for f in self._files())

    def _load_data(self):
        return read_image_file(self.images_file), read_label_file(self.labels_file)

    def download(self) -> None:
        """Fetch the four .gz files from the first mirror that answers (MD5-checked), and unpack them."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            if check_integrity(os.path.join(self.raw_folder, os.path.splitext(filename)[0])):
                continue
            errors = []
            for mirror in self.mirrors:
                try:
                    download_and_extract_archive(mirror + filename, self.raw_folder, filename=filename, md5=md5)
                except (RuntimeError, urllib.error.URLError, OSError) as e:
                    errors.append(f"{mirror + filename}: {e}")
                    continue
                break
            else:
                self._download_errors = errors
                return

    # -- items --------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        img = pil_image().fromarray(np.ascontiguousarray(self.data[index].numpy()))     # mode "L"
        return self._apply(img, int(self.targets[index]))

    @property
    def class_to_idx(self) -> dict:
        return {c: i for i, c in enumerate(self.classes)}

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"

    # the names before `data` / `targets`
    @property
    def train_labels(self):
        warnings.warn("train_labels has been renamed targets")
        return self.targets

    @property
    def test_labels(self):
        warnings.warn("test_labels has been renamed targets")
        return self.targets

    @property
    def train_data(self):
        warnings.warn("train_data has been renamed data")
        return self.data

    @property
    def test_data(self):
        warnings.warn("test_data has been renamed data")
        return self.data


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): root/FashionMNIST/raw/, MNIST's file names and format."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: root/KMNIST/raw/, MNIST's file names and format."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """EMNIST: root/EMNIST/raw/emnist-<split>-{train,test}-{images-idx3,labels-idx1}-ubyte[.gz]."""

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split: str, **kwargs):
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file, self.test_file = f"training_{split}.pt", f"test_{split}.pt"
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    @property
    def _file_prefix(self) -> str:
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def images_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-images-idx3-ubyte")

    @property
    def labels_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-labels-idx1-ubyte")

    def _source_urls(self):
        return [self.url]

    def download(self) -> None:
        """Fetch gzip.zip (MD5-checked) and unpack its .gz files into raw/."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        try:
            download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        except (RuntimeError, urllib.error.URLError, OSError) as e:
            self._download_errors = [f"{self.url}: {e}"]
            return
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(gzip_folder):
            if name.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, name), self.raw_folder)
        import shutil
        shutil.rmtree(gzip_folder)


class QMNIST(MNIST):
    """QMNIST: root/QMNIST/raw/{qmnist-train,qmnist-test,xnist}-{images-idx3-ubyte,labels-idx2-int}[.gz].

    `what` is "train", "test", "test10k" (the first 10,000 test images), "test50k" (the other 50,000)
    or "nist"; `targets` is int64 (N, 8) (class, NIST series, writer id, ...). With compat=True an item's
    target is the class as an int, otherwise the row of 8 values (an int64 tensor)."""

    subsets = {"train": "train", "test": "test", "test10k": "test", "test50k": "test", "nist": "nist"}
    _base = "https://raw.githubusercontent.com/facebookresearch/qmnist/master/"
    resources = {
        "train": [(_base + "qmnist-train-images-idx3-ubyte.gz", "ed72d4157d28c017586c42bc6afe6370"),
                  (_base + "qmnist-train-labels-idx2-int.gz", "0058f8dd561b90ffdd0f734c6a30e5e4")],
        "test": [(_base + "qmnist-test-images-idx3-ubyte.gz", "1394631089c404de565df7b7aeaf9412"),
                 (_base + "qmnist-test-labels-idx2-int.gz", "5b5b05890a5e13444e108efe57b788aa")],
        "nist": [(_base + "xnist-images-idx3-ubyte.xz", "7f124b3b8ab81486c9d8c2749c17f834"),
                 (_base + "xnist-labels-idx2-int.xz", "5ed0e788978e45d4a8bd4b7caec3d79d")],
    }
    classes = MNIST.classes

    def __init__(self, root, what: str | None = None, compat: bool = True, train: bool = True, **kwargs):
        if what is None:
            what = "train" if train else "test"
        self.what = verify_str_arg(what, "what", tuple(self.subsets))
        self.compat = compat
        self.data_file = what + ".pt"
        self.training_file = self.test_file = self.data_file
        super().__init__(root, train, **kwargs)

    def _resource_file(self, i: int) -> str:
        url = self.resources[self.subsets[self.what]][i][0]
        return os.path.join(self.raw_folder, os.path.splitext(os.path.basename(url))[0])

    @property
    def images_file(self) -> str:
        return self._resource_file(0)

    @property
    def labels_file(self) -> str:
        return self._resource_file(1)

    def _source_urls(self):
        return [url for url, _ in self.resources[self.subsets[self.what]]]

    def _load_data(self):
        import tensorplug
        data = _read_checked(self.images_file, 3, "images")
        targets = _idx_array(self.labels_file)
        if targets.ndim != 2:
            raise ValueError(f"{self.labels_file}: targets should have 2 dimensions instead of {targets.ndim}")
        targets = targets.astype(np.int64)
        if self.what == "test10k":
            data, targets = data[:10000], targets[:10000]
        elif self.what == "test50k":
            data, targets = data[10000:], targets[10000:]
        return tensorplug.from_numpy(np.ascontiguousarray(data)), tensorplug.from_numpy(np.ascontiguousarray(targets))

    def download(self) -> None:
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for url, md5 in self.resources[self.subsets[self.what]]:
            try:
                download_and_extract_archive(url, self.raw_folder, md5=md5)
            except (RuntimeError, urllib.error.URLError, OSError) as e:
                self._download_errors.append(f"{url}: {e}")

    def __getitem__(self, index: int):
        img = pil_image().fromarray(np.ascontiguousarray(self.data[index].numpy()))
        target = self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.compat:
            target = int(target[0])
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self) -> str:
        return f"Split: {self.what}"
