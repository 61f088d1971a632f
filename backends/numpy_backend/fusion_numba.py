"""The NumPy backend's default pointwise fusion (Backend.fuse_pointwise): a PointwiseProgram as one
numba-compiled loop that reads each input and writes the result once (the `compile` / `fast` extras).

Measured on a 2-vCPU AMD EPYC (AVX-512), one thread, 1M float32: bench/compile_step.py's 10-op
chain (tanh, exp, sigmoid, sqrt and arithmetic) took 1.5–1.7 ms as one loop against 2.7–3.5 ms in
NumPy's SIMD ufuncs op by op. The transcendentals are numba_math's vectorizable float32 functions.

What a loop computes (the NumPy kernels' semantics, to float32 rounding):
- float32 programs: add sub mul div neg abs sqrt maximum minimum (NaN propagates) exp tanh sigmoid,
  pow by a constant exponent that the NumPy kernel also computes by products (2, 3, 0.5, -0.5, -1, -2),
  comparisons and where;
- float64 programs: the same without exp / tanh / sigmoid (numba would call libm per element, slower
  than NumPy's SIMD ufuncs);
- anything else (log, sin, ..., another pow) is declined and the tape runs op by op.

Inputs, checked at each call: C-contiguous arrays of the result's shape, single elements (passed as
scalars), and arrays that broadcast along leading dimensions only (a bias) or trailing ones only (a
per-row value), at one split of the result's dimensions. Other layouts (a transposed input, a
broadcast in the middle) run the program op by op through the NumPy kernels, so results never
depend on the layout. One loop is compiled per program structure and layout (constants are loop
arguments), about 0.2–0.5 s each: during the capture for the shapes it saw (PointwiseProgram.shapes),
else on the first call with a new layout.
"""
from __future__ import annotations

import math

import numpy as np

from . import numba_loops

_state = {}
_loops = {}           # (structure key, layouts) -> compiled loop
_reference = []       # [the NumPy kernel table], for the op-by-op path

_ARITHMETIC = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
               "gt": "({0} > {1})", "lt": "({0} < {1})", "ge": "({0} >= {1})", "le": "({0} <= {1})",
               "eq": "({0} == {1})", "ne": "({0} != {1})",
               "maximum": "({0} if (({0} > {1}) | ({0} != {0})) else {1})",
               "minimum": "({0} if (({0} < {1}) | ({0} != {0})) else {1})",
               "neg": "(-{0})", "abs": "abs({0})", "sqrt": "math.sqrt({0})", "where": "({1} if {0} else {2})"}
_COMPARISONS = frozenset(("gt", "lt", "ge", "le", "eq", "ne"))
_TRANSCENDENTAL = {"exp": "exp({0})", "tanh": "tanh({0})", "sigmoid": "sigmoid({0})"}
# the exponents kernels._pow computes by products, in the same order of operations
_POW = {2: "({0} * {0})", 3: "({0} * {0} * {0})", 0.5: "math.sqrt({0})", -0.5: "(ONE / math.sqrt({0}))",
        -1: "(ONE / {0})", -2: "(ONE / ({0} * {0}))"}


def fuse_pointwise(program):
    """A callable(*arrays) -> array computing `program`, or None when numba is missing (or
    TENSORPLUG_NUMBA=0) or the program has an op no loop computes."""
    if numba_loops.cached(_state, _build) is None:
        return None
    body = _body(program)
    if body is None:
        return None
    lines, consts = body
    fdt = np.dtype(program.float_dtype)
    try:
        const_args = tuple(fdt.type(float(v)) for v in consts)
    except OverflowError:       # an int beyond any float: the NumPy kernel raises; op by op it will
        return None
    structure = (tuple(program.inputs), program.dtype, program.float_dtype, tuple(lines))
    return _FusedLoop(program, structure, lines, const_args)


def _body(program):
    """(the loop body's lines, the constants in order of use), or None for an op no loop computes."""
    f32 = program.float_dtype == "float32"
    lines, consts, names = [], [], []
    for i, (name, operands) in enumerate(program.steps):
        args = []
        for kind, v in operands:
            if kind == "in":
                args.append(f"v{v}")
            elif kind == "step":
                args.append(names[v])
            else:
                args.append(f"k{len(consts)}")
                consts.append(v)
        if name == "where" and not _is_bool(program, operands[0]):
            return None              # a float condition: NumPy's truthiness, left to the kernel
        if name == "pow":
            exponent = operands[1]
            if exponent[0] != "const" or type(exponent[1]) not in (int, float) or exponent[1] not in _POW:
                return None
            consts.pop()
            expr = _POW[exponent[1]].format(args[0])
        elif name in _ARITHMETIC:
            expr = _ARITHMETIC[name].format(*args)
        elif name in _TRANSCENDENTAL and f32:
            expr = _TRANSCENDENTAL[name].format(*args)
        else:
            return None
        names.append(f"s{i}")
        lines.append(f"s{i} = {expr}")
    return lines, consts


def _is_bool(program, operand):
    kind, v = operand
    if kind == "in":
        return program.inputs[v] == "bool"
    return kind == "step" and program.steps[v][0] in _COMPARISONS


class _FusedLoop:
    """One fused kernel: the layouts of its inputs are read at each call; a loop per layout."""

    def __init__(self, program, structure, lines, const_args):
        self.program, self.structure, self.lines, self.const_args = program, structure, lines, const_args
        self.out_dtype = np.dtype(program.dtype)
        if program.shapes is not None:           # compile now, inside the capture, for its shapes
            plan = _plan(program.shapes)
            if plan is not None:
                self._loop(plan[3])

    def _loop(self, kinds):
        key = (self.structure, kinds)
        loop = _loops.get(key)
        if loop is None:
            loop = _loops[key] = _compile(self.lines, kinds, len(self.const_args), self.program.float_dtype)
            dtypes = [np.dtype(d) for d in self.program.inputs]
            loop(0, 0, np.empty(0, self.out_dtype),        # numba compiles for these argument types
                 *(d.type(0) if k == "s" else np.empty(0, d) for k, d in zip(kinds, dtypes)), *self.const_args)
        return loop

    def __call__(self, *arrays):
        plan = _plan([a.shape for a in arrays])
        operands = None if plan is None else _operands(arrays, plan)
        if operands is None:
            return _op_by_op(self.program, arrays)
        shape, outer, inner, kinds = plan
        out = np.empty(shape, self.out_dtype)
        self._loop(kinds)(outer, inner, out.reshape(-1), *operands, *self.const_args)
        return out


def _plan(shapes):
    """(result shape, outer, inner, input kinds), or None for shapes no loop reads. The result, viewed
    as (outer, inner), reads each input as "f" (full), "s" (a scalar), "r" (a row repeated over outer:
    a leading broadcast) or "c" (a value per outer index: a trailing broadcast)."""
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        return None
    nd = len(shape)
    size = math.prod(shape)
    splits = set(range(nd + 1))
    padded = [(1,) * (nd - len(s)) + tuple(s) for s in shapes]
    partial = [p for p in padded if p != shape and math.prod(p) != 1]
    for p in partial:
        splits &= {k for k in splits if _leading(p, shape, k) or _trailing(p, shape, k)}
        if not splits:
            return None
    split = min(splits) if partial else 0
    kinds = tuple("f" if p == shape else "s" if math.prod(p) == 1 else "r" if _leading(p, shape, split) else "c"
                  for p in padded)
    return shape, math.prod(shape[:split]), math.prod(shape[split:]) if size else 0, kinds


def _leading(padded, shape, k):
    return all(d == 1 for d in padded[:k]) and padded[k:] == shape[k:]


def _trailing(padded, shape, k):
    return padded[:k] == shape[:k] and all(d == 1 for d in padded[k:])


def _operands(arrays, plan):
    """The loop's arguments for the arrays, or None when a full-size input is not C-contiguous: op by
    op then keeps eager's result layout (NumPy's order="K")."""
    out = []
    for a, kind in zip(arrays, plan[3]):
        if kind == "s":
            out.append(a.reshape(-1)[0])
        elif kind == "f":
            if not a.flags.c_contiguous:
                return None
            out.append(a.reshape(-1))
        else:
            out.append(np.ascontiguousarray(a).reshape(-1))
    return out


def _compile(lines, kinds, n_consts, float_dtype):
    """The loop over (outer, inner) for one body and one layout of the inputs, as numba source."""
    numba, math_fns = _state["k"]
    params = [f"a{i}" for i in range(len(kinds))]
    src = [f"def loop(outer, inner, out, {', '.join(params + [f'k{i}' for i in range(n_consts)])}):"]
    for i, kind in enumerate(kinds):
        if kind == "s":
            src.append(f"    v{i} = a{i}")
    src.append("    for o in range(outer):")
    src.append("        base = o * inner")
    for i, kind in enumerate(kinds):
        if kind == "c":
            src.append(f"        v{i} = a{i}[o]")
    src.append("        for j in range(inner):")
    for i, kind in enumerate(kinds):
        if kind == "f":
            src.append(f"            v{i} = a{i}[base + j]")
        elif kind == "r":
            src.append(f"            v{i} = a{i}[j]")
    src.extend(f"            {ln}" for ln in lines)
    src.append(f"            out[base + j] = s{len(lines) - 1}")
    namespace = {"math": math, "ONE": np.dtype(float_dtype).type(1.0), **math_fns}
    exec("\n".join(src), namespace)
    # no fast-math flags: each step rounds as the NumPy kernel does (no FMA contraction of a * b + c)
    return numba.njit(nogil=True, error_model="numpy")(namespace["loop"])


def _op_by_op(program, arrays):
    """The program through the NumPy kernels one step at a time (the eager values exactly)."""
    if not _reference:
        from .kernels import build
        _reference.append(build())
    k = _reference[0]
    values = []
    for name, operands in program.steps:
        args = [arrays[v] if kind == "in" else values[v] if kind == "step" else v for kind, v in operands]
        values.append(k[name](*args))
    return values[-1]


def _build(numba):
    from . import numba_math
    return numba, numba_math.functions()
