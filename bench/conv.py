"""Speed sanity check of the conv family on the NumPy backend, next to hand-written NumPy.

* LeNet-like first layer: conv2d of a 64x1x28x28 float32 batch with 6 5x5 filters (+ bias),
  forward, and forward + backward (input, weight and bias gradients of sum(y * g)).
* max_pool2d(2) and avg_pool2d(2) of a 64x6x24x24 batch, forward + backward (the NumPy column is
  only the forward of the same pooling, from four strided slices).

The reference is a hand-written NumPy im2col (sliding_window_view, one GEMM forward, two GEMMs
plus a col2im backward) doing the same work without a framework. The conv row is also timed with
the frontend decompositions (a backend whose table lacks the native conv kernels). Medians over
--repeat runs after warm-up, interleaved with the reference; no goal is set for these rows.

    python bench/conv.py [--quick] [--repeat 20] [--no-torch]
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import _harness as H


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
    ap = H.parser(__doc__)
    args = ap.parse_args(argv)
    batch = 4 if args.quick else 64
    repeat = H.repeats(args, 20)
    target = H.step_target(args) / 5
    H.header("conv family", args, batch=batch)
    import tensorplug as tp
    torch = H.get_torch(args)

    rng = np.random.default_rng(0)
    xn = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    wn = (rng.standard_normal((6, 1, 5, 5)) * 0.2).astype(np.float32)
    bn = rng.standard_normal(6).astype(np.float32)
    gn = rng.standard_normal((batch, 6, 24, 24)).astype(np.float32)

    def conv_fns(fw, device=None):
        kw = {} if device is None else {"device": device}
        x = fw.tensor(xn, requires_grad=True, **kw)
        w = fw.tensor(wn, requires_grad=True, **kw)
        b = fw.tensor(bn, requires_grad=True, **kw)
        g = fw.tensor(gn, **kw)
        conv2d = fw.nn.functional.conv2d

        def fwd():
            with fw.no_grad():
                return conv2d(x, w, b)

        def fwd_bwd():
            x.grad = w.grad = b.grad = None
            y = conv2d(x, w, b)
            y.backward(g)
            return y, x.grad, w.grad, b.grad
        return fwd, fwd_bwd

    tp_f, tp_fb = conv_fns(tp)
    ref = numpy_conv_fwd_bwd(xn, wn, bn, gn)
    for name, got, want in zip(("y", "grad x", "grad w", "grad b"), tp_fb(), ref):
        H.check_close(f"conv2d {name}", got.detach().numpy(), want)
    shape = f"{batch}x1x28x28 * 6x1x5x5"
    # rows: (workload, tensorplug fn, floor fn, floor name, torch builder or None)
    rows = [(f"conv2d {shape} forward", tp_f, lambda: numpy_conv_fwd(xn, wn, bn), "NumPy im2col",
             lambda: conv_fns(torch)[0]),
            (f"conv2d {shape} forward + backward", tp_fb, lambda: numpy_conv_fwd_bwd(xn, wn, bn, gn),
             "NumPy im2col + col2im", lambda: conv_fns(torch)[1])]

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
        d_f, d_fb = conv_fns(tp, "benchconv")
    except Exception as e:  # a registry that refuses run-time backends: skip the rows
        print(f"(decomposition rows skipped: {e})")
    else:
        rows += [(f"conv2d {shape} forward (decomposition)", d_f, lambda: numpy_conv_fwd(xn, wn, bn),
                  "NumPy im2col", None),
                 (f"conv2d {shape} forward + backward (decomposition)", d_fb,
                  lambda: numpy_conv_fwd_bwd(xn, wn, bn, gn), "NumPy im2col + col2im", None)]

    # pooling of the conv output
    pn = rng.standard_normal((batch, 6, 24, 24)).astype(np.float32)
    gpn = rng.standard_normal((batch, 6, 12, 12)).astype(np.float32)
    quarters = [pn[..., i::2, j::2] for i in (0, 1) for j in (0, 1)]

    def np_maxpool():
        return np.maximum(np.maximum(quarters[0], quarters[1]), np.maximum(quarters[2], quarters[3]))

    def np_avgpool():
        return (quarters[0] + quarters[1] + quarters[2] + quarters[3]) * 0.25

    def pool_fn(fw, name):
        p = fw.tensor(pn, requires_grad=True)
        gp = fw.tensor(gpn)
        fn = getattr(fw.nn.functional, name)

        def step():
            p.grad = None
            fn(p, 2).backward(gp)
        return step

    for name, ref_fn in (("max_pool2d", np_maxpool), ("avg_pool2d", np_avgpool)):
        rows.append((f"{name}(2) {batch}x6x24x24 forward + backward", pool_fn(tp, name), ref_fn,
                     "NumPy forward only (four strided slices)", lambda name=name: pool_fn(torch, name)))

    # every tensorplug row next to its floor first; PyTorch afterwards (see _harness.measure)
    times = [H.compare({"tensorplug": f, "floor": r}, repeat, target) for _, f, r, _, _ in rows]
    if torch is not None:
        for t, row in zip(times, rows):
            if row[4] is not None:
                t["torch"] = H.compare({"torch": row[4]()}, repeat, target)["torch"]
    for t, (workload, _, _, floor_name, _) in zip(times, rows):
        H.result(workload, t["tensorplug"], t["floor"], floor_name=floor_name, torch=t.get("torch"), args=args)


if __name__ == "__main__":
    main()
