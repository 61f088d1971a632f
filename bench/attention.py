"""scaled_dot_product_attention (causal) at GPT sizes: forward, and forward + backward.

* nanoGPT shakespeare_char at 2 layers x 64: batch 12, 4 heads, T 64, head dim 16 (also with the
  config's attention dropout 0.2);
* minGPT adder (gpt-nano): batch 64, 3 heads, T 6, head dim 16.

Floor: the same attention hand-written in NumPy (scores, causal mask, row softmax, product; the
backward's four products and softmax gradient). The "composition" rows time the Tensor-op path
that scaled_dot_product_attention took before the fused kernels (matmul, masked_fill, softmax,
matmul, recorded op by op), in the same run. Medians over --repeat samples, interleaved.

    python bench/attention.py [--quick] [--repeat 20] [--threads 1] [--no-torch]
"""
from __future__ import annotations

import math

import numpy as np

import _harness as H

SIZES = {"nanoGPT-char": (12, 4, 64, 16), "minGPT-adder": (64, 3, 6, 16)}


def numpy_attention(q, k, v, g, backward):
    scale = 1.0 / math.sqrt(q.shape[-1])
    T = q.shape[-2]
    s = np.matmul(q, k.swapaxes(-1, -2)) * np.float32(scale)
    s = np.where(np.tril(np.ones((T, T), bool)), s, np.float32(-np.inf))
    s = np.exp(s - s.max(-1, keepdims=True))
    w = s / s.sum(-1, keepdims=True)
    out = np.matmul(w, v)
    if not backward:
        return (out,)
    dv = np.matmul(w.swapaxes(-1, -2), g)
    dp = np.matmul(g, v.swapaxes(-1, -2))
    ds = w * (dp - (dp * w).sum(-1, keepdims=True)) * np.float32(scale)
    return out, np.matmul(ds, k), np.matmul(ds.swapaxes(-1, -2), q), dv


def fns(fw, arrays, dropout=0.0, composition=False):
    q, k, v = (fw.tensor(a, requires_grad=True) for a in arrays[:3])
    g = fw.tensor(arrays[3])
    if composition:                 # the Tensor-op path (tensorplug only)
        from tensorplug.ops.attention import _attend
        scale = 1.0 / math.sqrt(q.shape[-1])

        def sdpa(q, k, v, is_causal, dropout_p):
            return _attend(q, k, v, None, dropout_p, is_causal, scale, safe=True)[0]
    else:
        def sdpa(q, k, v, is_causal, dropout_p):
            return fw.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal, dropout_p=dropout_p)

    def fwd():
        with fw.no_grad():
            return sdpa(q, k, v, True, dropout)

    def fwd_bwd():
        q.grad = k.grad = v.grad = None
        out = sdpa(q, k, v, True, dropout)
        out.backward(g)
        return out, q.grad, k.grad, v.grad
    return fwd, fwd_bwd


def main(argv=None):
    ap = H.parser(__doc__)
    ap.add_argument("--threads", type=int, default=None, help="BLAS threads here and torch.set_num_threads")
    args = ap.parse_args(argv)
    repeat = H.repeats(args, 20)
    target = 0.0 if args.quick else 0.02
    import tensorplug as tp
    torch = H.get_torch(args)
    if args.threads:
        tp.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)
    H.header("scaled_dot_product_attention", args, threads=args.threads or "default")
    rows = []
    for label, (B, nh, T, hd) in SIZES.items():
        if args.quick:
            B = 2
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal((B, nh, T, hd), dtype=np.float32) for _ in range(4)]
        f, fb = fns(tp, arrays)
        cf, cfb = fns(tp, arrays, composition=True)
        want = numpy_attention(*arrays, True)
        for name, got, w in zip(("out", "grad q", "grad k", "grad v"), fb(), want):
            H.check_close(f"{label} {name}", got.detach().numpy(), w, rtol=1e-4, atol=1e-5)
        shape = f"{B}x{nh}x{T}x{hd} causal"
        for what, a, b, back in (("forward", f, cf, False), ("forward + backward", fb, cfb, True)):
            rows.append((f"sdpa {label} {shape} {what}", a, lambda back=back, x=arrays: numpy_attention(*x, back),
                         (lambda back=back, x=arrays: fns(torch, x)[back]) if torch is not None else None, b))
        if label == "nanoGPT-char":
            dfb = fns(tp, arrays, dropout=0.2)[1]
            dcfb = fns(tp, arrays, dropout=0.2, composition=True)[1]
            rows.append((f"sdpa {label} {shape} dropout 0.2 forward + backward", dfb,
                         lambda x=arrays: numpy_attention(*x, True),
                         (lambda x=arrays: fns(torch, x, dropout=0.2)[1]) if torch is not None else None, dcfb))
    H.report_fused(rows, repeat, target, args, floor_name="NumPy attention (no dropout)", composition_name="before the fused kernels")

if __name__ == "__main__":
    main()
