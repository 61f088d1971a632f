"""The CUDA backend's pointwise fusion (Backend.fuse_pointwise): a PointwiseProgram
(core/compiler/fusion.py) as one `cupy.ElementwiseKernel`, so a chain of pointwise ops is one memory
pass instead of one kernel launch and one temporary per op.

The generated body keeps one local per step (`t<i>`, float / double per the program's float dtype, or
bool for comparisons and a `where` of two bools), so no operand is evaluated twice and the source grows
linearly. Semantics are those of the unfused kernels and of the NumPy backend's numexpr lowering:
- maximum / minimum propagate NaN (from either side, as np.maximum / np.minimum);
- sigmoid is 1 / (1 + exp(-x)), computed as fused.py's sigmoid (exp(-|x|), no overflow), the formula
  the unfused CUDA kernel uses, so fusing does not change its values;
- Python-number constants take the float dtype (NumPy's weak scalars); they are scalar kernel
  arguments, not literals, so programs that differ only in constants share one compiled kernel;
- comparisons give bool; bool operands of float ops are converted to the float type (NumPy's promotion);
- `where(cond, a, b)`: a nonzero (or NaN) float condition counts as true, as in NumPy.
Inputs broadcast against each other (ElementwiseKernel's NumPy rules). Anything else answers None,
and the compiled tape runs the ops one by one.
"""
from __future__ import annotations

import numpy as np

from .fused import _ctype

KERNEL_NAME = "tp_fused_pointwise"

# {C}: the computation type (float / double). Helpers are functions so each operand is read once.
_PREAMBLE = r"""
__device__ __forceinline__ {C} tp_pw_sigmoid({C} v) {
    {C} e = exp(-fabs(v));
    return v >= 0 ? ({C})1 / (({C})1 + e) : e / (({C})1 + e);
}
__device__ __forceinline__ {C} tp_pw_maximum({C} a, {C} b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ {C} tp_pw_minimum({C} a, {C} b) { return (a < b || a != a) ? a : b; }
"""
_FLOAT_OPS = {
    "neg": "(-{0})", "exp": "exp({0})", "log": "log({0})", "sqrt": "sqrt({0})", "tanh": "tanh({0})",
    "sin": "sin({0})", "cos": "cos({0})", "abs": "fabs({0})", "expm1": "expm1({0})", "log1p": "log1p({0})",
    "sigmoid": "tp_pw_sigmoid({0})",
    "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
    "pow": "pow({0}, {1})", "maximum": "tp_pw_maximum({0}, {1})", "minimum": "tp_pw_minimum({0}, {1})",
}
_COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
_ARITY = {**{n: 2 for n in _COMPARE}, "where": 3,
          **{n: (1 if "{1}" not in f else 2) for n, f in _FLOAT_OPS.items()}}
_CACHE = {}     # (ElementwiseKernel class, source) -> kernel: CuPy compiles once per kernel object


def _cupy():
    import cupy
    return cupy


def generate(program):
    """(in_params, out_params, body, preamble, constants) of the kernel computing `program`, or None
    when it cannot be expressed. `constants`: NumPy scalars passed after the input arrays."""
    fdt = getattr(program, "float_dtype", None)
    if fdt not in ("float32", "float64") or program.dtype not in ("bool", fdt) or not program.inputs:
        return None
    c = _ctype(fdt)
    params, kinds, names = [], [], []       # kinds: "f" (float_dtype) / "b" (bool), per input
    for j, dt in enumerate(program.inputs):
        if dt not in ("bool", fdt):
            return None
        params.append(f"{dt} x{j}")
        kinds.append("b" if dt == "bool" else "f")
        names.append(f"x{j}")
    consts, const_names = [], {}
    body, step_kinds = [], []
    if not program.steps:
        return None
    for i, step in enumerate(program.steps):
        try:
            kernel, operands = step
            operands = tuple(operands)
        except (TypeError, ValueError):
            return None
        if _ARITY.get(kernel) != len(operands):
            return None
        args = []                           # (C expression, kind)
        for operand in operands:
            try:
                where_from, v = operand
            except (TypeError, ValueError):
                return None
            if where_from == "in" and type(v) is int and 0 <= v < len(names):
                args.append((names[v], kinds[v]))
            elif where_from == "step" and type(v) is int and 0 <= v < i:
                args.append((f"t{v}", step_kinds[v]))
            elif where_from == "const" and type(v) in (int, float, bool):
                try:
                    with np.errstate(over="ignore"):       # NumPy's weak float scalar: out of range is inf
                        value = np.dtype(fdt).type(v)
                except OverflowError:                      # an int beyond any float: NumPy refuses it too
                    return None
                key = value.tobytes()
                if key not in const_names:
                    const_names[key] = f"k{len(consts)}"
                    consts.append(value)
                    params.append(f"{fdt} {const_names[key]}")
                args.append((const_names[key], "f"))
            else:
                return None

        def as_float(a):
            return a[0] if a[1] == "f" else f"(({c}){a[0]})"
        if kernel == "where":
            (cond, ck), a, b = args
            test = cond if ck == "b" else f"({cond} != 0)"
            if a[1] == b[1] == "b":
                kind, expr = "b", f"({test} ? {a[0]} : {b[0]})"
            else:
                kind, expr = "f", f"({test} ? {as_float(a)} : {as_float(b)})"
        elif kernel in _COMPARE:
            a, b = args
            kind = "b"
            if a[1] == b[1] == "b":     # bool against bool: exact, no conversion
                expr = f"({a[0]} {_COMPARE[kernel]} {b[0]})"
            else:
                expr = f"({as_float(a)} {_COMPARE[kernel]} {as_float(b)})"
        else:
            if all(k == "b" for _, k in args):
                return None             # bool-only arithmetic: its result dtype is not the program's to say
            kind, expr = "f", _FLOAT_OPS[kernel].format(*(as_float(a) for a in args))
        step_kinds.append(kind)
        body.append(f"{'bool' if kind == 'b' else c} t{i} = {expr};")
    if step_kinds[-1] != ("b" if program.dtype == "bool" else "f"):
        return None
    body.append(f"y = t{len(program.steps) - 1};")
    return ", ".join(params), f"{program.dtype} y", "\n".join(body), _PREAMBLE.replace("{C}", c), tuple(consts)


def fuse_pointwise(program, xp=None):
    """A callable(*input arrays) -> result array running `program` as one ElementwiseKernel of array
    module `xp` (default: CuPy), or None (an op it cannot express, or no ElementwiseKernel in xp)."""
    generated = generate(program)
    if generated is None:
        return None
    if xp is None:
        try:
            xp = _cupy()
        except Exception:       # noqa: BLE001 - CuPy not importable: nothing to fuse with
            return None
    cls = getattr(xp, "ElementwiseKernel", None)
    if cls is None:             # the NumPy-based stand-in of the CPU tests: no CUDA compiler
        return None
    in_params, out_params, body, preamble, consts = generated
    key = (cls, in_params, out_params, body, preamble)
    k = _CACHE.get(key)
    if k is None:
        k = _CACHE[key] = cls(in_params, out_params, body, KERNEL_NAME, preamble=preamble)
    n = len(program.inputs)

    def kernel(*arrays):
        if len(arrays) != n:
            raise TypeError(f"{KERNEL_NAME} takes {n} arrays, got {len(arrays)}")
        # launch on the inputs' device: the op replaces kernels a per-device table ran inside Device(i)
        with arrays[0].device:
            return k(*arrays, *consts)
    kernel.__name__ = KERNEL_NAME
    kernel.elementwise_kernel = k
    return kernel
