"""Deterministic parameter values for a state dict, made with NumPy only, so the fixture script
(torchvision) and the tests (tensorplug) fill a model identically: entry i of the key order gets a
seeded pattern of at most 9973 values (a prime, so rows do not repeat it in step) tiled to its size."""
import numpy as np

_PERIOD = 9973


def fill_values(entries):
    """entries: [(key, shape, dtype name)] in state-dict order -> {key: float32 array} (integer
    buffers such as num_batches_tracked are left out)."""
    out = {}
    for i, (key, shape, dtype) in enumerate(entries):
        if not dtype.startswith("float"):
            continue
        n = int(np.prod(shape)) if len(shape) else 1
        pat = np.random.default_rng(1000 + i).uniform(-1.0, 1.0, size=min(n, _PERIOD)).astype(np.float32)
        v = np.resize(pat, n).reshape(shape)
        leaf = key.rsplit(".", 1)[-1]
        if leaf == "running_var":
            v = 1.0 + 0.5 * np.abs(v)
        elif leaf == "running_mean" or leaf == "bias":
            v = 0.1 * v
        elif len(shape) == 1:            # a norm layer's weight
            v = 1.0 + 0.1 * v
        else:                            # uniform with variance 2 / fan_in (He) keeps ReLU activations O(1)
            fan_in = int(np.prod(shape[1:]))
            v = v * np.float32(np.sqrt(6.0 / fan_in))
        out[key] = np.ascontiguousarray(v, dtype=np.float32)
    return out


def input_for(arch):
    size = 64 if arch in ("alexnet", "squeezenet1_1") else 32
    return np.random.default_rng(7).standard_normal((1, 3, size, size)).astype(np.float32)
