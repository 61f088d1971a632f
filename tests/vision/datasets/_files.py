"""Writers of small dataset files in the official formats, for the dataset tests (and nothing else)."""
import gzip
import os
import pickle

import numpy as np

_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(np.int16): 0x0B, np.dtype(np.int32): 0x0C,
          np.dtype(np.float32): 0x0D, np.dtype(np.float64): 0x0E}


def idx_bytes(arr: np.ndarray) -> bytes:
    """An array as an IDX file: magic 0x0000TTNN, the sizes as big-endian uint32, the data big-endian."""
    head = bytes([0, 0, _CODES[arr.dtype], arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    return head + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def write_idx(path, arr, gz=False):
    data = idx_bytes(arr)
    if gz:
        path = str(path) + ".gz"
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
    return path


def mnist_arrays(n, seed=0, size=28):
    rng = np.random.RandomState(seed)
    return rng.randint(0, 256, (n, size, size)).astype(np.uint8), rng.randint(0, 10, n).astype(np.uint8)


def write_mnist(root, name="MNIST", n_train=7, n_test=5, gz=False):
    """root/<name>/raw/{train,t10k}-... with random images; returns {split: (images, labels)}."""
    raw = os.path.join(root, name, "raw")
    os.makedirs(raw, exist_ok=True)
    out = {}
    for split, n, seed in (("train", n_train, 1), ("t10k", n_test, 2)):
        images, labels = mnist_arrays(n, seed)
        write_idx(os.path.join(raw, f"{split}-images-idx3-ubyte"), images, gz)
        write_idx(os.path.join(raw, f"{split}-labels-idx1-ubyte"), labels, gz)
        out[split] = (images, labels)
    return out


def write_cifar(root, hundred=False, per_batch=4):
    """The python-version CIFAR batches (pickles of dicts holding a uint8 array and label lists)."""
    rng = np.random.RandomState(3)
    folder = os.path.join(root, "cifar-100-python" if hundred else "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    names = ["train"] if hundred else [f"data_batch_{i}" for i in range(1, 6)]
    key = "fine_labels" if hundred else "labels"
    n_classes = 100 if hundred else 10
    out = {}
    for name in names + ["test" if hundred else "test_batch"]:
        data = rng.randint(0, 256, (per_batch, 3072)).astype(np.uint8)
        labels = [int(v) for v in rng.randint(0, n_classes, per_batch)]
        entry = {"batch_label": f"batch {name}", key: labels, "data": data,
                 "filenames": [f"img_{i}.png" for i in range(per_batch)]}
        if hundred:
            entry["coarse_labels"] = [v // 5 for v in labels]
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump(entry, f, protocol=2)
        out[name] = (data, labels)
    meta_name, meta_key = ("meta", "fine_label_names") if hundred else ("batches.meta", "label_names")
    classes = [f"class_{i}" for i in range(n_classes)]
    with open(os.path.join(folder, meta_name), "wb") as f:
        pickle.dump({meta_key: classes, "num_cases_per_batch": per_batch}, f, protocol=2)
    return folder, out, classes
