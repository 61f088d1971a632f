"""Tiny op: c = a + b on 100-element float32 tensors (new output), next to NumPy's own np.add.

Measures the per-op overhead of the frontend (dispatch, tensor wrapping) on top of the kernel.
Floor: np.add on the very arrays the tensors hold. Goal: <= 4x NumPy's call.
Second row: the same op on a third-party backend (NumPy's kernels under another name, so its kernel
results are checked, see tensorplug.dispatch.kernel_check) against the built-in table; the issue's
goal is <= 0.2 us of checking per op.

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

    ac, bc = _third_party_tensors(tp, an, bn, "checked")
    au, bu = _third_party_tensors(tp, an, bn, "unchecked")
    H.check_close("a + b (checked)", (ac + bc).cpu().numpy(), np.add(an, bn))
    fns = {"tensorplug": lambda: a + b, "floor": lambda: np.add(an, bn), "checked": lambda: ac + bc,
           "unchecked": lambda: au + bu}
    torch = H.get_torch(args)

    def torch_build():
        at, bt = torch.from_numpy(an), torch.from_numpy(bn)
        return lambda: at + bt
    t = H.measure(fns, H.repeats(args, 31), target_s=0.002 if args.quick else 0.02,
                  torch_build=torch_build if torch is not None else None)
    H.result(f"c = a + b, {args.numel}-element float32", t["tensorplug"], t["floor"], floor_name="np.add",
             goal=4.0, torch=t.get("torch"), args=args)
    over = t["checked"] - t["unchecked"]
    H.result(f"c = a + b, {args.numel}-element float32, kernel results checked (third-party backend)",
             t["checked"], t["unchecked"], floor_name="the same backend, checks removed", args=args,
             note="issue 19: checking costs <= 0.2 us per op", checking_overhead_us=round(over * 1e6, 3))


def _third_party_tensors(tp, an, bn, name):
    """a and b on device `name`: NumPy's kernels in a backend that is not built in (so checked); for
    "unchecked" the wrappers are taken off again, which isolates their cost."""
    from tensorplug.backends.numpy_backend import NumpyBackend
    from tensorplug.dispatch import hookimpl, registry

    class ThirdParty(NumpyBackend):
        pass
    ThirdParty.name = ThirdParty.device_type = name

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(ThirdParty())
    registry.register_plugin(Plugin(), name=f"bench-{name}")
    a = tp.from_numpy(an).to(name)
    table = a._k
    assert getattr(table["add"], "__kernel_check__", False), "a third-party backend's kernels are not checked"
    if name == "unchecked":
        for k, fn in list(table.items()):
            table[k] = getattr(fn, "__wrapped__", fn) if getattr(fn, "__kernel_check__", False) else fn
        table["__check__"] = None           # the frontend's pointwise binary ops check through it
    return a, tp.from_numpy(bn).to(name)


if __name__ == "__main__":
    main()
