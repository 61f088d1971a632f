"""A kernel tape: the backend-kernel calls of one captured run, as straight-line Python.

Capture (capture.py) sees every call through a device's kernel table and writes it down as an `Op`:
the kernel, its arguments with each array replaced by a slot number, and the slot(s) of its result.
`Tape.compile()` turns the ops into the source of one function

    def replay(s0, s1, ...):                  # the tape's inputs, in order
        s7 = k3(s0, s1)                       # one line per kernel call
        s8 = k5(s7, 1, keepdims=True)
        del s7                                # each slot dropped after its last use
        return (s8,)

executed once, so that a replay costs one Python call per kernel and nothing else: no dtype
promotion, no shape checks, no autograd recording (capture ran all of those once).
"""
from __future__ import annotations

import itertools


class Slot:
    """A reference to an array of the tape (an input, a constant or an op's result)."""
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"s{self.index}"


class RngState:
    """A generator's state argument: the replay asks the generator again (manual_seed replaces it)."""
    __slots__ = ("generator",)

    def __init__(self, generator):
        self.generator = generator


class Guard:
    """An op's result that must come out equal on replay (a value a helper's caller branched on)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class GuardFailed(Exception):
    """A replay met a Guard answered differently: the captured program does not apply to this call."""


class Op:
    """One kernel call: `out = fn(*args, **kwargs)`, with Slot / RngState in args and kwargs (nested
    in lists and tuples too); out is a Slot, a tuple of (Slot | None), a Guard, or None (nothing kept)."""
    __slots__ = ("name", "fn", "args", "kwargs", "out")

    def __init__(self, name, fn, args, kwargs, out):
        self.name, self.fn, self.args, self.kwargs, self.out = name, fn, args, kwargs, out

    def slots_read(self):
        return [s.index for s in _slots_in((self.args, tuple(self.kwargs.values())))]

    def slots_written(self):
        return [s.index for s in _slots_in(self.out)]

    def __repr__(self):
        def short(x):
            if isinstance(x, dict):
                return "<kernel table>" if "__backend__" in x else "{...}"
            if type(x) in (list, tuple):
                return type(x)(short(e) for e in x)
            return x
        return f"{self.out} = {self.name}{short(self.args)}{short(self.kwargs) or ''}"


def _slots_in(x):
    if isinstance(x, Slot):
        yield x
    elif isinstance(x, (list, tuple)):
        for e in x:
            yield from _slots_in(e)


class Tape:
    """The ops of one capture, the slots it reads from outside (`inputs`, in the order replay takes
    them), the constant arrays it holds (`constants`: slot -> array), and the slots it hands back."""

    def __init__(self, ops, inputs, constants, outputs):
        self.ops = ops
        self.inputs = list(inputs)
        self.constants = dict(constants)
        self.outputs = list(outputs)
        self._fn = None
        self.source = None

    def __len__(self):
        return len(self.ops)

    def kernel_names(self):
        return [op.name for op in self.ops]

    def compile(self):
        """The replay function: (arrays of `inputs`) -> tuple of the arrays of `outputs`."""
        if self._fn is None:
            self._fn, self.source = _generate(self)
        return self._fn

    def __call__(self, *arrays):
        return self.compile()(*arrays)


def _generate(tape):
    env = {}
    names = itertools.count()

    def const(value):
        name = f"c{next(names)}"
        env[name] = value
        return name

    def expr(x):
        if isinstance(x, Slot):
            return f"s{x.index}"
        if isinstance(x, RngState):
            return f"{const(x.generator)}._get()"
        if type(x) is list:
            return "[" + ", ".join(expr(e) for e in x) + "]"
        if type(x) is tuple:
            inner = ", ".join(expr(e) for e in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if x is None or x is True or x is False or (type(x) in (int, str) and len(repr(x)) < 40):
            return repr(x)
        if type(x) is float and x == x and x not in (float("inf"), float("-inf")):
            return repr(x)
        return const(x)

    last_use = {}
    for i, op in enumerate(tape.ops):
        for s in op.slots_read():
            last_use[s] = i
    for s in tape.outputs:
        last_use[s] = len(tape.ops)
    for s, arr in tape.constants.items():
        env[f"s{s}"] = arr
        last_use[s] = len(tape.ops)        # globals of the function: never deleted

    params, seen = [], set()
    for n, s in enumerate(tape.inputs):       # one tensor passed twice: one slot, a dummy parameter
        params.append(f"s{s}" if s not in seen else f"_dup{n}")
        seen.add(s)
    lines = [f"def replay({', '.join(params)}):"]
    live = set(tape.inputs)
    for i, op in enumerate(tape.ops):
        operands = [*(expr(a) for a in op.args), *(f"{k}={expr(v)}" for k, v in op.kwargs.items())]
        call = f"{const(op.fn)}({', '.join(operands)})"
        written = op.slots_written()
        if op.out is None:
            lines.append(f"    {call}")
        elif isinstance(op.out, Guard):
            lines.append(f"    if {call} != {const(op.out.value)}:")
            lines.append(f"        raise {const(GuardFailed)}({op.name!r})")
        elif isinstance(op.out, Slot):
            # "_": a kernel that hands back its argument, a constant
            target = "_" if op.out.index in tape.constants else f"s{op.out.index}"
            lines.append(f"    {target} = {call}")
        else:
            targets = ", ".join(f"s{o.index}" if isinstance(o, Slot) and o.index not in tape.constants else "_"
                                for o in op.out)
            lines.append(f"    {targets}, = {call}" if len(op.out) == 1 else f"    {targets} = {call}")
        live.update(written)
        dead = sorted(s for s in set(op.slots_read()) | set(written)
                      if last_use.get(s, -1) <= i and s in live and s not in tape.constants)
        if dead:
            lines.append(f"    del {', '.join(f's{s}' for s in dead)}")
            live.difference_update(dead)
    outs = ", ".join(f"s{s}" for s in tape.outputs)
    lines.append(f"    return ({outs},)" if len(tape.outputs) == 1 else f"    return ({outs})")
    source = "\n".join(lines) + "\n"
    code = compile(source, "<tensorplug.compile replay>", "exec")
    exec(code, env)
    return env["replay"], source
