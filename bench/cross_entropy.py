"""F.cross_entropy with class-index targets (float32 logits), forward + backward, at model sizes.

* nanoGPT shakespeare_char (batch 12 x block 64 rows, vocab 65), ignore_index -1 unused;
* minGPT adder (batch 64 x block 6 rows, vocab 10), the first 3 targets of each row -1 (ignored);
* word_language_model (bptt 35 x batch 20 rows, vocab 10000).

Floor: the same loss and gradient hand-written in NumPy (row log-sum-exp, picked logits, softmax minus
one-hot over the mean's count). The "composition" rows time log_softmax followed by nll_loss (the path
cross_entropy took before the fused kernels), in the same run. Medians over --repeat samples, interleaved.

    python bench/cross_entropy.py [--quick] [--repeat 20] [--threads 1] [--no-torch]
"""
from __future__ import annotations

import numpy as np

import _harness as H

SIZES = {"nanoGPT-char": (768, 65, 0), "minGPT-adder": (384, 10, 3), "word_language_model": (700, 10000, 0)}


def numpy_cross_entropy(x, t):
    """Mean loss over the rows whose target isn't -1, and its gradient."""
    valid = t != -1
    safe = np.where(valid, t, 0)
    top = x.max(1, keepdims=True)
    e = np.exp(x - top)
    s = e.sum(1, keepdims=True)
    lse = np.log(s) + top
    n = valid.sum()
    loss = ((lse[:, 0] - np.take_along_axis(x, safe[:, None], 1)[:, 0]) * valid).sum() / n
    e /= s
    e[np.arange(len(t)), safe] -= 1
    e *= (valid / np.float32(n)).astype(np.float32)[:, None]
    return loss, e


def fns(fw, x, t, composition=False):
    xt = fw.tensor(x, requires_grad=True)
    tt = fw.tensor(t)
    F = fw.nn.functional
    if composition:                 # the path before the fused kernels (tensorplug only)
        def loss_fn():
            return F.nll_loss(F.log_softmax(xt, 1), tt, ignore_index=-1)
    else:
        def loss_fn():
            return F.cross_entropy(xt, tt, ignore_index=-1)

    def fwd_bwd():
        xt.grad = None
        loss = loss_fn()
        loss.backward()
        return loss, xt.grad
    return fwd_bwd


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
    H.header("cross_entropy", args, threads=args.threads or "default")
    rows = []
    for label, (n, c, masked) in SIZES.items():
        if args.quick:
            n = 24
        rng = np.random.default_rng(0)
        x = rng.standard_normal((n, c), dtype=np.float32)
        t = rng.integers(0, c, n)
        if masked:
            t.reshape(-1, 6)[:, :masked] = -1
        f = fns(tp, x, t)
        want = numpy_cross_entropy(x, t)
        for name, got, w in zip(("loss", "grad"), f(), want):
            H.check_close(f"{label} {name}", got.detach().numpy(), w, rtol=1e-4, atol=1e-6)
        rows.append((f"cross_entropy {label} {n}x{c} forward + backward", f,
                     lambda x=x, t=t: numpy_cross_entropy(x, t),
                     (lambda x=x, t=t: fns(torch, x, t)) if torch is not None else None, fns(tp, x, t, True)))
    H.report_fused(rows, repeat, target, args, floor_name="NumPy cross-entropy and gradient", composition_name="log_softmax + nll_loss")

if __name__ == "__main__":
    main()
