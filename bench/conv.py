"""Speed sanity check of the conv family on the NumPy backend, next to hand-written NumPy.

* LeNet-like first layer: conv2d of a 64x1x28x28 float32 batch with 6 5x5 filters (+ bias),
  forward, and forward + backward (input, weight and bias gradients of sum(y * g)).
* max_pool2d(2) and avg_pool2d(2) of a 64x6x24x24 batch, forward + backward (the NumPy column is
  only the forward of the same pooling, from four strided slices).

The reference is a hand-written NumPy im2col (sliding_window_view, one GEMM forward, two GEMMs
plus a col2im backward) doing the same work without a framework. The conv row is also timed with
the frontend decompositions (a backend whose table lacks the native conv kernels). Medians over
--repeat runs after warm-up; a benchmark reports numbers and asserts nothing about time.

    python bench/conv.py [--repeat 20]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import tensorplug as torch
import tensorplug.nn.functional as F


def _median(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def numpy_conv_fwd(x, w, b):
    N, C, H, W = x.shape
    O, _, kh, kw = w.shape
    cols = sliding_window_view(x, (kh, kw), axis=(2, 3))            # (N, C, oh, ow, kh, kw)
    oh, ow = cols.shape[2:4]
    cols = cols.transpose(1, 4, 5, 0, 2, 3).reshape(C * kh * kw, N * oh * ow)
    y = (w.reshape(O, -1) @ cols).reshape(O, N, oh, ow).transpose(1, 0, 2, 3) + b[:, None, None]
    return np.ascontiguousarray(y), cols


def numpy_conv_fwd_bwd(x, w, b, g):
    N, C, H, W = x.shape
    O, _, kh, kw = w.shape
    y, cols = numpy_conv_fwd(x, w, b)
    gm = g.transpose(1, 0, 2, 3).reshape(O, -1)                        # (O, N*oh*ow)
    gw = (gm @ cols.T).reshape(w.shape)
    gb = g.sum(axis=(0, 2, 3))
    dcols = (w.reshape(O, -1).T @ gm).reshape(C, kh, kw, N, H - kh + 1, W - kw + 1)
    gx = np.zeros((C, N, H, W), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            gx[:, :, i:i + H - kh + 1, j:j + W - kw + 1] += dcols[:, i, j]
    return y, gx.transpose(1, 0, 2, 3), gw, gb


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    wn = (rng.standard_normal((6, 1, 5, 5)) * 0.2).astype(np.float32)
    bn = rng.standard_normal(6).astype(np.float32)
    gn = rng.standard_normal((64, 6, 24, 24)).astype(np.float32)

    rows = []
    t_np_f = _median(lambda: numpy_conv_fwd(xn, wn, bn), args.repeat)
    t_np_fb = _median(lambda: numpy_conv_fwd_bwd(xn, wn, bn, gn), args.repeat)

    def run(device=None):
        x = torch.tensor(xn, device=device, requires_grad=True)
        w = torch.tensor(wn, device=device, requires_grad=True)
        b = torch.tensor(bn, device=device, requires_grad=True)
        g = torch.tensor(gn, device=device)

        def fwd():
            with torch.no_grad():
                return F.conv2d(x, w, b)

        def fwd_bwd():
            x.grad = w.grad = b.grad = None
            y = F.conv2d(x, w, b)
            y.backward(g)
        return _median(fwd, args.repeat), _median(fwd_bwd, args.repeat)

    t_tp_f, t_tp_fb = run()
    rows.append(("conv2d 64x1x28x28 * 6x1x5x5 forward", t_tp_f, t_np_f))
    rows.append(("conv2d forward + backward", t_tp_fb, t_np_fb))

    # the same through the decompositions: a backend without the native conv-family kernels
    from tensorplug.backends.numpy_backend import NumpyBackend
    from tensorplug.dispatch import registry

    class Decomposed(NumpyBackend):
        name = "numpy-decomposed-conv"
        device_type = "benchconv"

        def native_kernels(self):
            drop = ("conv", "conv_transpose", "max_pool", "avg_pool")
            return {k: v for k, v in NumpyBackend.native_kernels(self).items() if k not in drop}
    try:
        registry.add(Decomposed())
        t_d_f, t_d_fb = run("benchconv")
        rows.append(("conv2d forward (decomposition)", t_d_f, t_np_f))
        rows.append(("conv2d forward + backward (decomposition)", t_d_fb, t_np_fb))
    except Exception as e:  # a registry that refuses run-time backends: skip the row
        print(f"(decomposition rows skipped: {e})")

    # pooling of the conv output
    p = torch.tensor(rng.standard_normal((64, 6, 24, 24)).astype(np.float32), requires_grad=True)
    gp = torch.tensor(rng.standard_normal((64, 6, 12, 12)).astype(np.float32))
    pn = p.detach().numpy()

    quarters = [pn[..., i::2, j::2] for i in (0, 1) for j in (0, 1)]

    def np_maxpool():
        return np.maximum(np.maximum(quarters[0], quarters[1]), np.maximum(quarters[2], quarters[3]))

    def np_avgpool():
        return (quarters[0] + quarters[1] + quarters[2] + quarters[3]) * 0.25

    for name, fn, ref in (("max_pool2d(2)", F.max_pool2d, np_maxpool), ("avg_pool2d(2)", F.avg_pool2d, np_avgpool)):
        def step(fn=fn):
            p.grad = None
            fn(p, 2).backward(gp)
        rows.append((f"{name} 64x6x24x24 forward + backward", _median(step, args.repeat),
                     _median(ref, args.repeat)))

    print(f"{'case':<48}{'tensorplug ms':>15}{'numpy ms':>11}{'ratio':>8}")
    for name, t, ref in rows:
        print(f"{name:<48}{t * 1e3:>15.3f}{ref * 1e3:>11.3f}{t / ref:>8.2f}")
    print("(pool rows: the NumPy column is the forward alone, four strided slices combined: a floor)")


if __name__ == "__main__":
    main()
