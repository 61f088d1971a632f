"""MNIST, FashionMNIST, KMNIST, EMNIST, QMNIST: IDX files (plain or .gz) in torchvision's layout."""
import gzip
import os

import numpy as np
import pytest

import tensorplug
from tensorplug.vision import datasets
from tensorplug.vision.datasets.mnist import read_sn3_pascalvincent_tensor

from ._files import idx_bytes, write_idx, write_mnist

pytest.importorskip("PIL")


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("cls", [datasets.MNIST, datasets.FashionMNIST, datasets.KMNIST])
def test_mnist_family_reads_idx_files(tmp_path, cls, gz):
    """data / targets are the files' values; an item is an 'L' PIL image and an int."""
    arrays = write_mnist(tmp_path, cls.__name__, gz=gz)
    for train, key in ((True, "train"), (False, "t10k")):
        ds = cls(str(tmp_path), train=train)
        images, labels = arrays[key]
        assert ds.data.dtype == tensorplug.uint8 and ds.targets.dtype == tensorplug.int64
        np.testing.assert_array_equal(ds.data.numpy(), images)
        np.testing.assert_array_equal(ds.targets.numpy(), labels)
        assert len(ds) == len(images)
        img, target = ds[len(ds) - 1]
        assert img.mode == "L" and img.size == (28, 28) and type(target) is int
        np.testing.assert_array_equal(np.asarray(img), images[-1])
        assert target == labels[-1]
    assert ds.class_to_idx[ds.classes[3]] == 3 and len(ds.classes) == 10
    assert repr(ds).splitlines() == [f"Dataset {cls.__name__}", "    Number of datapoints: 5",
                                     f"    Root location: {tmp_path}", "    Split: Test"]


def test_transforms_apply_to_image_and_target(tmp_path):
    arrays = write_mnist(tmp_path)
    ds = datasets.MNIST(tmp_path, transform=lambda im: np.asarray(im).sum(), target_transform=lambda t: t + 100)
    x, y = ds[2]
    assert x == arrays["train"][0][2].astype(np.int64).sum() and y == arrays["train"][1][2] + 100


def test_missing_files_give_one_error_naming_them(tmp_path):
    with pytest.raises(RuntimeError) as e:
        datasets.MNIST(tmp_path / "data", train=False)
    msg = str(e.value)
    assert os.path.join(str(tmp_path / "data"), "MNIST", "raw") in msg
    assert "t10k-images-idx3-ubyte" in msg and "t10k-labels-idx1-ubyte" in msg and "download=True" in msg


def test_idx_reader_all_types_and_bad_files(tmp_path):
    for arr in (np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 7, np.linspace(-1, 1, 6).astype(np.float32),
                np.array([[-3, 5]], dtype=np.int16), np.array([1.5, -2.25]), np.array([-1, 2], dtype=np.int8)):
        path = write_idx(tmp_path / "a.idx", arr)
        t = read_sn3_pascalvincent_tensor(str(path))
        assert t.numpy().dtype == arr.dtype
        np.testing.assert_array_equal(t.numpy(), arr)
    good = write_mnist(tmp_path)["train"]
    raw = tmp_path / "MNIST" / "raw"
    images = raw / "train-images-idx3-ubyte"
    data = images.read_bytes()
    images.write_bytes(b"\x00\x00\x07\x03" + data[4:])                  # an unknown element type
    with pytest.raises(RuntimeError, match=r"train-images-idx3-ubyte: not an IDX file \(magic number 0x00000703"):
        datasets.MNIST(tmp_path)
    images.write_bytes(data[:-10])                                        # truncated
    with pytest.raises(RuntimeError, match=r"train-images-idx3-ubyte: truncated"):
        datasets.MNIST(tmp_path)
    images.write_bytes(data[:10])                                         # cut inside the header
    with pytest.raises(RuntimeError, match=r"train-images-idx3-ubyte: truncated IDX header"):
        datasets.MNIST(tmp_path)
    write_idx(images, good[0].astype(np.int32))                           # the wrong element type
    with pytest.raises(TypeError, match="train-images-idx3-ubyte: images should be of dtype uint8"):
        datasets.MNIST(tmp_path)
    write_idx(images, good[0][:, 0])                                      # 2 dimensions
    with pytest.raises(ValueError, match="images should have 3 dimensions"):
        datasets.MNIST(tmp_path)
    os.remove(images)
    (raw / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(good[0]))[:-20])   # a cut .gz
    with pytest.raises(RuntimeError, match=r"train-images-idx3-ubyte.gz: cannot read"):
        datasets.MNIST(tmp_path)


def test_emnist_split_files_and_classes(tmp_path):
    raw = tmp_path / "EMNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.RandomState(5)
    images, labels = rng.randint(0, 256, (3, 28, 28)).astype(np.uint8), np.array([1, 26, 3], dtype=np.uint8)
    write_idx(raw / "emnist-letters-test-images-idx3-ubyte", images, gz=True)
    write_idx(raw / "emnist-letters-test-labels-idx1-ubyte", labels)
    ds = datasets.EMNIST(tmp_path, split="letters", train=False)
    np.testing.assert_array_equal(ds.data.numpy(), images)
    assert ds.classes[:3] == ["N/A", "a", "b"] and len(ds.classes) == 27 and ds[1][1] == 26
    assert len(datasets.EMNIST.classes_split_dict["byclass"]) == 62
    assert len(datasets.EMNIST.classes_split_dict["balanced"]) == 47
    with pytest.raises(ValueError, match="Unknown value 'wrong' for argument split"):
        datasets.EMNIST(tmp_path, split="wrong")
    with pytest.raises(RuntimeError, match="emnist-letters-train-images-idx3-ubyte"):
        datasets.EMNIST(tmp_path, split="letters")


def test_qmnist_targets_compat_and_test_subsets(tmp_path):
    raw = tmp_path / "QMNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.RandomState(6)
    images = rng.randint(0, 256, (4, 28, 28)).astype(np.uint8)
    targets = rng.randint(0, 100000, (4, 8)).astype(np.int32)
    targets[:, 0] = [7, 1, 4, 9]
    write_idx(raw / "qmnist-test-images-idx3-ubyte", images)
    write_idx(raw / "qmnist-test-labels-idx2-int", targets, gz=True)
    ds = datasets.QMNIST(tmp_path, train=False)
    assert ds.targets.dtype == tensorplug.int64
    np.testing.assert_array_equal(ds.targets.numpy(), targets)
    assert [ds[i][1] for i in range(4)] == [7, 1, 4, 9]
    full = datasets.QMNIST(tmp_path, what="test", compat=False)
    np.testing.assert_array_equal(full[2][1].numpy(), targets[2])
    assert len(datasets.QMNIST(tmp_path, what="test10k")) == 4 and len(datasets.QMNIST(tmp_path, what="test50k")) == 0
    assert repr(full).endswith("Split: test")
    with pytest.raises(ValueError, match="argument what"):
        datasets.QMNIST(tmp_path, what="nope")
