"""DataLoader workers send large batch tensors through shared memory, small ones pickled."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.utils.data import DataLoader, TensorDataset
from tensorplug.utils.data import _worker

pytestmark = pytest.mark.timeout(60)
X = np.arange(40 * 5, dtype=np.float32).reshape(40, 5)
Y = np.arange(40) % 3


@pytest.mark.parametrize("method,min_bytes,shared", [("fork", 0, True), ("fork", None, False), ("fork", 1 << 30, False),
                                                     ("spawn", 0, True), ("spawn", None, False)])
def test_batches_through_shared_memory(monkeypatch, method, min_bytes, shared):
    monkeypatch.setattr(_worker, "SHARED_MEMORY_MIN_BYTES", min_bytes)
    ds = TensorDataset(tp.from_numpy(X), tp.from_numpy(Y))
    loader = DataLoader(ds, batch_size=8, num_workers=2 if method == "fork" else 1, multiprocessing_context=method,
                        timeout=30)
    batches = list(loader)
    assert len(batches) == 5
    for i, (xb, yb) in enumerate(batches):
        np.testing.assert_array_equal(xb.numpy(), X[8 * i:8 * i + 8])
        np.testing.assert_array_equal(yb.numpy(), Y[8 * i:8 * i + 8])
        assert (xb.dtype, yb.dtype) == (tp.float32, tp.int64)
        assert xb.is_shared() is shared and yb.is_shared() is shared


def test_default_threshold_keeps_small_batches_pickled():
    ds = TensorDataset(tp.from_numpy(X))
    (xb,), = list(DataLoader(ds, batch_size=40, num_workers=1, multiprocessing_context="fork", timeout=30))
    assert not xb.is_shared() and xb.numel() * 4 < _worker.SHARED_MEMORY_MIN_BYTES
