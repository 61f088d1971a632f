"""Time of whole training steps of small networks, next to a floor measured in the same run.

* LeNet-5 training step: batch 64 of 1x28x28, conv(1->6, 5x5, pad 2)-relu-maxpool2,
  conv(6->16, 5x5)-relu-maxpool2, linear 400-120-84-10, cross-entropy, backward, SGD update
  under no_grad.
* ResNet-18 (examples/resnet.py) forward + backward on 8x3x64x64, float32, training mode.
* a 2-layer LSTM (hidden 200, 35 steps, batch 20) forward + backward.

Two floors, measured in the same run:
* GEMM floor: the NumPy (float32) time of the matrix products the step needs: for every
  convolution the im2col GEMM of the forward and the two GEMMs of the backward (input and weight
  gradients), for every linear layer (and LSTM gate projection) its three products. It leaves out
  im2col itself, pooling, normalisation, pointwise ops and Python overhead: a lower bound for an
  implementation that computes convolutions as NumPy matrix products of these shapes (thin
  shapes, like LeNet's, run far below the CPU's peak).
* FLOP floor: the same FLOPs at the rate of a large square NumPy GEMM (the CPU's practical peak).
Medians over --repeat runs after warm-up. A benchmark reports numbers; it asserts nothing about time.

    python bench/nn_steps.py [--repeat 5] [--device cpu] [--skip-resnet]
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import statistics
import time

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F

_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _load_resnet():
    spec = importlib.util.spec_from_file_location("tensorplug_example_resnet", _ROOT / "examples" / "resnet.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def _median_time(fn, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- the GEMM floor ----------------------------------------------------------------------------------
def _gemm_shapes(model, run_forward):
    """(m, k, n) of every matrix product of a forward + backward, from the shapes seen by hooks."""
    shapes = []

    def conv_hook(mod, args, out):
        x = args[0]
        n = x.shape[0]
        cout, cin_g, kh, kw = mod.weight.shape
        g = mod.groups
        ho, wo = out.shape[2], out.shape[3]
        m, k, c = n * ho * wo, cin_g * kh * kw, cout // g
        for _ in range(g):
            shapes.extend([(m, k, c), (m, c, k), (k, m, c)])   # forward, grad input, grad weight

    def linear_hook(mod, args, out):
        x = args[0]
        m = int(np.prod(x.shape[:-1]))
        k, c = mod.in_features, mod.out_features
        shapes.extend([(m, k, c), (m, c, k), (k, m, c)])

    handles = []
    for mod in model.modules():
        if isinstance(mod, nn.Conv2d):
            handles.append(mod.register_forward_hook(conv_hook))
        elif isinstance(mod, nn.Linear):
            handles.append(mod.register_forward_hook(linear_hook))
    with torch.no_grad():
        run_forward()
    for h in handles:
        h.remove()
    return shapes


def _lstm_gemm_shapes(steps, batch, inp, hidden, layers):
    shapes = []
    for layer in range(layers):
        fin = inp if layer == 0 else hidden
        m = steps * batch
        shapes += [(m, fin, 4 * hidden), (m, 4 * hidden, fin), (fin, m, 4 * hidden)]   # input projection
        for _ in range(steps):                                                       # recurrence
            shapes += [(batch, hidden, 4 * hidden), (batch, 4 * hidden, hidden), (hidden, batch, 4 * hidden)]
    return shapes


def _peak_gemm_rate(repeat, n=1024):
    """FLOP/s of a large square float32 NumPy GEMM: the best this CPU does through NumPy."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    return 2 * n ** 3 / _median_time(lambda: np.matmul(a, b), repeat)


def _gemm_floor(shapes, repeat):
    rng = np.random.default_rng(0)
    cache = {}
    for s in set(shapes):
        m, k, n = s
        cache[s] = (rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32))

    def run():
        for s in shapes:
            a, b = cache[s]
            np.matmul(a, b)
    flops = sum(2 * m * k * n for m, k, n in shapes)
    return _median_time(run, repeat), flops


# -- the steps ---------------------------------------------------------------------------------------
def bench_lenet(repeat, device):
    torch.manual_seed(0)
    model = LeNet5().to(device)
    x = torch.randn(64, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    lr = 0.01

    def step():
        out = model(x)
        loss = F.cross_entropy(out, y)
        for p in model.parameters():
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.sub_(lr * p.grad)
        return loss

    t = _median_time(step, repeat)
    floor, flops = _gemm_floor(_gemm_shapes(model, lambda: model(x)), repeat)
    return t, floor, flops


def bench_resnet(repeat, device):
    resnet = _load_resnet()
    torch.manual_seed(0)
    model = resnet.resnet18(num_classes=1000).to(device)
    x = torch.randn(8, 3, 64, 64, device=device)
    y = torch.randint(0, 1000, (8,), device=device)

    def step():
        for p in model.parameters():
            p.grad = None
        loss = F.cross_entropy(model(x), y)
        loss.backward()

    t = _median_time(step, repeat, warmup=1)
    floor, flops = _gemm_floor(_gemm_shapes(model, lambda: model(x)), repeat)
    return t, floor, flops


def bench_lstm(repeat, device, steps=35, batch=20, hidden=200, layers=2):
    torch.manual_seed(0)
    model = nn.LSTM(hidden, hidden, num_layers=layers).to(device)
    x = torch.randn(steps, batch, hidden, device=device)

    def step():
        for p in model.parameters():
            p.grad = None
        out, _ = model(x)
        out.pow(2).mean().backward()

    t = _median_time(step, repeat)
    floor, flops = _gemm_floor(_lstm_gemm_shapes(steps, batch, hidden, hidden, layers), repeat)
    return t, floor, flops


def _report(name, t, floor, flops, peak):
    print(f"{name}: {t * 1e3:.2f} ms")
    print(f"    GEMM floor (the step's matrix products in NumPy) {floor * 1e3:9.2f} ms   step / floor {t / floor:6.2f}")
    print(f"    FLOP floor ({flops / 1e9:.3f} GFLOP at the square-GEMM rate) {flops / peak * 1e3:9.2f} ms   "
          f"step / floor {t * peak / flops:6.2f}   achieved {flops / t / 1e9:.2f} GFLOP/s")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--skip-resnet", action="store_true")
    p.add_argument("--skip-lstm", action="store_true")
    a = p.parse_args(argv)
    dev = torch.device(a.device)
    probe = torch.zeros(1, device=dev)
    peak = _peak_gemm_rate(a.repeat)
    print(f"device {dev}, backend {probe.backend.name!r}, median of {a.repeat}; floors are NumPy float32 on "
          f"the host (square 1024 GEMM: {peak / 1e9:.1f} GFLOP/s)")
    _report("LeNet-5 train step (64x1x28x28, float32)", *bench_lenet(a.repeat, dev), peak)
    if not a.skip_resnet:
        _report("ResNet-18 forward+backward (8x3x64x64, float32)", *bench_resnet(a.repeat, dev), peak)
    if not a.skip_lstm:
        _report("LSTM 2 layers x 200 forward+backward (35 steps, batch 20)", *bench_lstm(a.repeat, dev), peak)


if __name__ == "__main__":
    main()
