"""Tiny op: c = a + b on 100-element float32 tensors (new output), next to NumPy's own np.add.

Measures the per-op overhead of the frontend (dispatch, tensor wrapping) on top of the kernel.
Floor: np.add on the very arrays the tensors hold. Goal: <= 4x NumPy's call.

    python bench/tiny_op.py [--quick] [--repeat N] [--numel 100] [--no-torch]
"""
from __future__ import annotations

import numpy as np

import _harness as H


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--numel", type=int, default=100)
    args = p.parse_args(argv)
    H.header("tiny op", args)
    import tensorplug as tp

    rng = np.random.default_rng(0)
    an = rng.standard_normal(args.numel, dtype=np.float32)
    bn = rng.standard_normal(args.numel, dtype=np.float32)
    a, b = tp.from_numpy(an), tp.from_numpy(bn)
    H.check_close("a + b", (a + b).numpy(), np.add(an, bn))

    fns = {"tensorplug": lambda: a + b, "floor": lambda: np.add(an, bn)}
    torch = H.get_torch(args)

    def torch_build():
        at, bt = torch.from_numpy(an), torch.from_numpy(bn)
        return lambda: at + bt
    t = H.measure(fns, H.repeats(args, 31), target_s=0.002 if args.quick else 0.02,
                  torch_build=torch_build if torch is not None else None)
    H.result(f"c = a + b, {args.numel}-element float32", t["tensorplug"], t["floor"], floor_name="np.add",
             goal=4.0, torch=t.get("torch"), args=args)


if __name__ == "__main__":
    main()
