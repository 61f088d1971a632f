"""Cost of the decompositions of API version 2's optional kernels, next to the NumPy backend's native kernel.

Each row times one kernel call on the same arguments: "tensorplug" is the decomposition (on NumPy's
kernel table without the kernels being measured, so everything it calls is native), the floor is the
native NumPy kernel; `required_only` is the decomposition on a table of the 40 required kernels alone
(the pointwise kernels it calls decomposed as well). Sizes: 1e3 and 1e5 elements (1e5 is the issue's
threshold: a decomposition should stay within 20x of native there, or say why it cannot).
Medians over --repeat runs after warm-up, interleaved with the floor; no goal is set for these rows.

    python bench/decompositions.py [--quick] [--repeat 7] [-k NAME]
"""
from __future__ import annotations

import functools

import numpy as np

import _harness as H


def tables():
    """(native, decomposed, required-only) kernel tables of the NumPy backend."""
    from tensorplug.backends.numpy_backend.kernels import build
    from tensorplug.dispatch.backend_api import REQUIRED, STRUCTURAL
    from tensorplug.dispatch import decompositions_structural as DS
    from tensorplug.dispatch.decompositions import complete_table
    native = build()
    dec = {k: v for k, v in native.items() if k not in STRUCTURAL}
    dec.update({n: functools.partial(getattr(DS, n), dec) for n in STRUCTURAL})
    from tensorplug.dispatch.decompositions import DECOMPOSITIONS, POINTWISE
    dec.update({n: functools.partial(DECOMPOSITIONS[n], native) for n in POINTWISE})   # each alone decomposed
    req = complete_table({k: v for k, v in native.items() if k in REQUIRED})
    return native, dec, req


def workloads(n, rng):
    """{label: (kernel, args)} with about n elements each; args are rebuilt per call where the kernel
    writes into one of them (scatter)."""
    side = max(2, int(round(n ** 0.5)))
    f32 = rng.standard_normal(n).astype(np.float32)
    near1 = rng.uniform(0.999, 1.001, n)
    sq = rng.standard_normal((side, side)).astype(np.float32)
    rows = max(1, n // 100)
    idx = rng.integers(0, 100, (rows, 100))
    src = rng.standard_normal((rows, 100))
    k = max(1, n // 16)
    small = rng.uniform(-1, 1, (k, 4, 4)) + 4 * np.eye(4)
    big = rng.uniform(-1, 1, (side, side)) + side * np.eye(side)
    half = np.where(rng.random(n) < 0.5, f32, 0)
    ints = rng.integers(-1000, 1000, n)
    return {
        f"prod({n},) all": ("prod", (near1, None, False)),
        f"prod({side},{side}) axis 1": ("prod", (sq, (1,), False)),
        f"any({n},) all": ("any", (half, None, False)),
        f"all({n},) all": ("all", (half, None, False)),
        f"argmax({n},) flat": ("argmax", (f32, None, False)),
        f"argmin({rows},100) axis 1": ("argmin", (f32[:rows * 100].reshape(rows, 100), 1, False)),
        f"cumsum({n},)": ("cumsum", (f32, 0)),
        f"cumsum({rows},100) axis 0": ("cumsum", (f32[:rows * 100].reshape(rows, 100), 0)),
        f"cumprod({n},)": ("cumprod", (near1, 0)),
        f"flip({side},{side}) both": ("flip", (sq, (0, 1))),
        f"pad({side},{side}) constant 2": ("pad", (sq, ((2, 2), (2, 2)), "constant", 0.0)),
        f"pad({side},{side}) reflect 2": ("pad", (sq, ((2, 2), (2, 2)), "reflect", 0.0)),
        f"pad({side},{side}) replicate 2": ("pad", (sq, ((2, 2), (2, 2)), "replicate", 0.0)),
        f"gather({rows},100) axis 1": ("gather", (src, idx, 1)),
        f"scatter({rows},100) axis 1": ("scatter", (src.copy(), idx, src, 1)),
        f"scatter_add({rows},100) axis 1": ("scatter_add", (src.copy(), idx, src, 1)),
        f"nonzero({n},)": ("nonzero", (half,)),
        f"nonzero({side},{side})": ("nonzero", (np.where(sq > 0, sq, 0),)),
        f"inv({k},4,4)": ("inv", (small,)),
        f"inv({side},{side})": ("inv", (big,)),
        f"solve({k},4,4) @ ({k},4,1)": ("solve", (small, np.ones((k, 4, 1)))),
        f"solve({side},{side}) @ ({side},1)": ("solve", (big, np.ones((side, 1)))),
        # pointwise kernels of version 1 (core/dispatch/decompositions.py)
        f"sub({n},) float32": ("sub", (f32, f32[::-1].copy())),
        f"maximum({n},) float32": ("maximum", (f32, f32[::-1].copy())),
        f"tanh({n},) float32": ("tanh", (f32,)),
        f"atan2({n},) float32": ("atan2", (f32, f32[::-1].copy())),
        f"round({n},) float32": ("round", (f32 * 4,)),
        f"fmod({n},) int64": ("fmod", (ints, np.where(ints[::-1] == 0, 7, ints[::-1]))),
        f"bitwise_xor({n},) int64": ("bitwise_xor", (ints, ints[::-1].copy())),
        f"left_shift({n},) int64": ("left_shift", (ints, np.abs(ints[::-1]) % 64)),
    }


def _result(r):
    return tuple(r) if isinstance(r, tuple) else (r,)


def main(argv=None):
    ap = H.parser(__doc__)
    ap.add_argument("-k", dest="pattern", default=None, help="only rows whose label contains this")
    args = ap.parse_args(argv)
    sizes = (100,) if args.quick else (1000, 100_000)
    repeat = H.repeats(args, 7)
    target = 0.0 if args.quick else 0.02
    H.header("decompositions of optional kernels (NumPy backend)", args, sizes=sizes)
    native, dec, req = tables()
    rng = np.random.default_rng(0)
    for n in sizes:
        for label, (name, a) in workloads(n, rng).items():
            if args.pattern and args.pattern not in label:
                continue
            if name in ("scatter", "scatter_add"):
                # in place: each table writes into its own copy of x
                fns = {t: (lambda K=K, a=a: K[name](a[0].copy(), *a[1:])) for t, K in
                       (("tensorplug", dec), ("floor", native), ("required_only", req))}
                for t, K in (("tensorplug", dec), ("required_only", req)):
                    got, want = a[0].copy(), a[0].copy()
                    K[name](got, *a[1:])
                    native[name](want, *a[1:])
                    H.check_close(f"{label} ({t})", got, want, rtol=1e-12, atol=1e-12)
            else:
                fns = {t: (lambda K=K, a=a: K[name](*a)) for t, K in
                       (("tensorplug", dec), ("floor", native), ("required_only", req))}
                want = _result(native[name](*a))
                # float32 scans of 1e5 values: the native sequential sum drifts ~1e-3 from the pairwise one
                atol = 1e-2 if name.startswith("cum") else 1e-4
                for t in ("tensorplug", "required_only"):
                    for g, w in zip(_result(fns[t]()), want):
                        H.check_close(f"{label} ({t})", g, w, rtol=1e-4, atol=atol)
            times = H.compare(fns, repeat, target)
            ratio_req = times["required_only"] / times["floor"]
            H.result(label, times["tensorplug"], times["floor"], floor_name="native NumPy kernel", args=args,
                     required_only=f"{H.fmt(times['required_only'])} (ratio {ratio_req:.2f})")


if __name__ == "__main__":
    main()
