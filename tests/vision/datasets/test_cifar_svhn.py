"""CIFAR10 / CIFAR100 (python pickles through the data-only unpickler) and SVHN (.mat through SciPy)."""
import os
import pickle

import numpy as np
import pytest

from tensorplug.vision import datasets
from tensorplug.vision.datasets.cifar import load_pickle

from ._files import write_cifar

pytest.importorskip("PIL")


@pytest.mark.parametrize("hundred", [False, True])
def test_cifar_reads_the_batches(tmp_path, hundred):
    """data is the batches' rows as (N, 32, 32, 3) HWC uint8, targets the labels, classes from meta."""
    cls = datasets.CIFAR100 if hundred else datasets.CIFAR10
    folder, batches, classes = write_cifar(tmp_path, hundred)
    train = cls(str(tmp_path), train=True)
    names = ["train"] if hundred else [f"data_batch_{i}" for i in range(1, 6)]
    rows = np.vstack([batches[n][0] for n in names])
    expected = rows.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    assert isinstance(train.data, np.ndarray) and train.data.shape == expected.shape
    np.testing.assert_array_equal(train.data, expected)
    assert train.targets == sum((batches[n][1] for n in names), [])
    assert train.classes == classes and train.class_to_idx["class_7"] == 7
    img, target = train[3]
    assert img.mode == "RGB" and img.size == (32, 32) and target == train.targets[3]
    np.testing.assert_array_equal(np.asarray(img), expected[3])
    test = cls(tmp_path, train=False)
    np.testing.assert_array_equal(test.data.reshape(len(test), -1),
                                  batches["test" if hundred else "test_batch"][0].reshape(-1, 3, 32, 32)
                                  .transpose(0, 2, 3, 1).reshape(len(test), -1))
    assert repr(test).endswith("Split: Test")


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_cifar_unpickler_refuses_code(tmp_path):
    folder, _, _ = write_cifar(tmp_path)
    path = os.path.join(folder, "data_batch_2")
    with open(path, "wb") as f:
        pickle.dump({"data": _Evil(), "labels": []}, f, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match=r"data_batch_2: refusing to load the global posix.system"):
        datasets.CIFAR10(tmp_path)
    with open(path, "wb") as f:
        pickle.dump({"data": np.array([object()], dtype=object), "labels": []}, f, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="Python objects are refused"):
        load_pickle(path)


def test_cifar_bad_and_missing_files_are_named(tmp_path):
    with pytest.raises(RuntimeError) as e:
        datasets.CIFAR10(tmp_path)
    msg = str(e.value)
    assert os.path.join(str(tmp_path), "cifar-10-batches-py") in msg and "data_batch_5" in msg
    assert "batches.meta" in msg and "cifar-10-python.tar.gz" in msg
    folder, _, _ = write_cifar(tmp_path)
    with open(os.path.join(folder, "data_batch_3"), "r+b") as f:
        f.truncate(100)
    with pytest.raises(RuntimeError, match="data_batch_3: not a readable CIFAR batch"):
        datasets.CIFAR10(tmp_path)
    with open(os.path.join(folder, "data_batch_3"), "wb") as f:
        pickle.dump({"pixels": [1, 2]}, f, protocol=2)
    with pytest.raises(RuntimeError, match="data_batch_3: not a CIFAR batch"):
        datasets.CIFAR10(tmp_path)


def test_svhn_reads_the_mat_files(tmp_path):
    sio = pytest.importorskip("scipy.io")
    rng = np.random.RandomState(4)
    x = rng.randint(0, 256, (32, 32, 3, 6)).astype(np.uint8)
    y = np.array([[10], [1], [2], [10], [9], [5]], dtype=np.uint8)
    sio.savemat(tmp_path / "test_32x32.mat", {"X": x, "y": y})
    ds = datasets.SVHN(str(tmp_path), split="test")
    assert ds.data.shape == (6, 3, 32, 32) and ds.data.dtype == np.uint8
    np.testing.assert_array_equal(ds.data, x.transpose(3, 2, 0, 1))
    np.testing.assert_array_equal(ds.labels, [0, 1, 2, 0, 9, 5])
    img, target = ds[3]
    assert img.mode == "RGB" and target == 0
    np.testing.assert_array_equal(np.asarray(img), x[:, :, :, 3])
    with pytest.raises(RuntimeError, match=r"train_32x32.mat"):
        datasets.SVHN(tmp_path)
    with pytest.raises(ValueError, match="argument split"):
        datasets.SVHN(tmp_path, split="validation")
    (tmp_path / "extra_32x32.mat").write_bytes(b"MATLAB 5.0 but not really")
    with pytest.raises(RuntimeError, match="extra_32x32.mat: not a readable MATLAB .mat file"):
        datasets.SVHN(tmp_path, split="extra")
