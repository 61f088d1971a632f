"""Tiny graph: (a * b).sum() and backward on 100-element float32 tensors that require grad.

Measures the autograd overhead (recording two nodes, running the engine, accumulating .grad).
Floor: NumPy's bare work of the same computation, as the HIPS autograd and PyTorch tables count
it: the forward product and sum, and the backward gradients b * 1 and a * 1. Goal: <= 20x.
The .grad fields are reset before each call (as a training loop's zero_grad would).

    python bench/tiny_graph.py [--quick] [--repeat N] [--numel 100] [--no-torch]
"""
from __future__ import annotations

import numpy as np

import _harness as H


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--numel", type=int, default=100)
    args = p.parse_args(argv)
    H.header("tiny graph + backward", args)
    import tensorplug as tp

    rng = np.random.default_rng(0)
    an = rng.standard_normal(args.numel, dtype=np.float32)
    bn = rng.standard_normal(args.numel, dtype=np.float32)
    a = tp.tensor(an, requires_grad=True)
    b = tp.tensor(bn, requires_grad=True)
    one = np.float32(1.0)

    def framework():
        a.grad = None
        b.grad = None
        (a * b).sum().backward()

    def floor():
        (an * bn).sum()                    # forward
        return bn * one, an * one          # backward: d/da = b * 1, d/db = a * 1

    framework()
    ga, gb = floor()
    H.check_close("grad a", a.grad.numpy(), ga)
    H.check_close("grad b", b.grad.numpy(), gb)
    fns = {"tensorplug": framework, "floor": floor}
    torch = H.get_torch(args)

    def torch_build():
        at = torch.tensor(an, requires_grad=True)
        bt = torch.tensor(bn, requires_grad=True)

        def torch_fn():
            at.grad = None
            bt.grad = None
            (at * bt).sum().backward()
        return torch_fn
    t = H.measure(fns, H.repeats(args, 31), target_s=0.002 if args.quick else 0.03,
                  torch_build=torch_build if torch is not None else None)
    H.result(f"(a*b).sum() + backward, {args.numel} elements", t["tensorplug"], t["floor"],
             floor_name="NumPy bare work: a*b, sum, b*1, a*1", goal=20.0, torch=t.get("torch"), args=args)


if __name__ == "__main__":
    main()
