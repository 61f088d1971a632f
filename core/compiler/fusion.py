"""Pointwise fusion of a tape: chains of elementwise kernels become one kernel of the backend's.

A fusible op is a pointwise kernel of POINTWISE with array / Python-number arguments and no `out=`.
Its result may join the op that reads it when that op is the only reader (and the result is not
one of the tape's outputs): each maximal such tree, of at least MIN_OPS ops, is handed to the
backend as a `PointwiseProgram`; when the backend answers with a callable (Backend.fuse_pointwise:
numexpr on NumPy, an ElementwiseKernel on CuPy), the tree's ops are replaced by one op calling it,
at the position of the tree's root. A backend that answers None (or a tree it declines) keeps the
ops as they are: fusion is an optimisation, never a requirement.

Every float array of a tree has one dtype (float32 or float64); bool values (comparisons) may feed
`where`. Python numbers take the tree's dtype, as NumPy's weak scalars do.
"""
from __future__ import annotations

from .tape import Op, Slot

# kernel -> number of operands; the backend's translation says what each one computes
POINTWISE = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "pow": 2, "maximum": 2, "minimum": 2,
    "neg": 1, "exp": 1, "log": 1, "sqrt": 1, "tanh": 1, "sin": 1, "cos": 1, "abs": 1, "sigmoid": 1,
    "expm1": 1, "log1p": 1,
    "gt": 2, "lt": 2, "ge": 2, "le": 2, "eq": 2, "ne": 2,
    "where": 3,
}
COMPARISONS = frozenset(("gt", "lt", "ge", "le", "eq", "ne"))
MIN_OPS = 2
MIN_ELEMENTS = 4096       # below it one backend call per op is as fast as a fused one (numexpr, measured)


class PointwiseProgram:
    """What a fused kernel computes: `steps[i] = (kernel name, operands)`, each operand ("in", j) (the
    j-th input array), ("step", i) or ("const", number); the last step is the result. `inputs` are the
    input arrays' dtype names (at least one), `dtype` the result's (float32 / float64 / bool), and
    `float_dtype` the one float dtype of every non-bool value (constants take it). Comparisons give
    bool, every other step float_dtype; where's condition is a bool input or a comparison.
    `shapes`: the input arrays' shapes at capture (None when unknown), so that a backend can compile
    its kernel for them during the capture instead of at the first replay."""

    def __init__(self, inputs, steps, dtype, float_dtype, shapes=None):
        self.inputs, self.steps, self.dtype, self.float_dtype = inputs, steps, dtype, float_dtype
        self.shapes = shapes

    def __repr__(self):
        return f"PointwiseProgram({self.inputs} -> {self.dtype}: {self.steps})"


def fuse(tape, meta, backend):
    """The tape with its fusible trees replaced by fused ops (a new Tape; `tape` unchanged when
    nothing fuses). meta: slot -> (shape, dtype name) of every array the capture saw."""
    fuse_fn = getattr(backend, "fuse_pointwise", None)
    if fuse_fn is None:
        return tape, 0
    ops = tape.ops
    readers = {}
    for i, op in enumerate(ops):
        for s in op.slots_read():
            readers.setdefault(s, []).append(i)
    outputs = set(tape.outputs)
    fusible = [_fusible(op, meta) for op in ops]
    absorbed = set()
    replacement = {}
    n_fused = 0
    for root in range(len(ops) - 1, -1, -1):
        if not fusible[root] or root in absorbed:
            continue
        tree = _grow(root, ops, fusible, readers, outputs, absorbed)
        if len(tree) < MIN_OPS:
            continue
        out_slot = ops[root].out.index
        shape, dtype = meta[out_slot]
        if _numel(shape) < MIN_ELEMENTS:
            continue
        if _written_between(ops, tree, root):
            continue
        built = _program(ops, tree, root, meta)
        if built is None:
            continue
        program, in_slots = built
        kernel = fuse_fn(program)
        if kernel is None:
            continue
        absorbed.update(tree)
        replacement[root] = Op("fused_pointwise", kernel, tuple(Slot(s) for s in in_slots), {}, Slot(out_slot))
        n_fused += 1
    if not n_fused:
        return tape, 0
    new_ops = []
    for i, op in enumerate(ops):
        if i in replacement:
            new_ops.append(replacement[i])
        elif i not in absorbed:
            new_ops.append(op)
    from .tape import Tape
    return Tape(new_ops, tape.inputs, tape.constants, tape.outputs), n_fused


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _fusible(op, meta):
    n = POINTWISE.get(op.name)
    if n is None or op.kwargs or len(op.args) != n or not isinstance(op.out, Slot):
        return False
    for a in op.args:
        if isinstance(a, Slot):
            if a.index not in meta or meta[a.index][1] not in ("float32", "float64", "bool"):
                return False
        elif type(a) not in (int, float, bool):
            return False
    return meta.get(op.out.index, (None, None))[1] in ("float32", "float64", "bool")


def _grow(root, ops, fusible, readers, outputs, absorbed):
    """The op indices of the tree under `root`: producers whose only reader is in the tree."""
    tree, todo = [root], [root]
    producer = {}
    for i in range(root):
        if isinstance(ops[i].out, Slot):
            producer[ops[i].out.index] = i
    while todo:
        i = todo.pop()
        for a in ops[i].args:
            if not isinstance(a, Slot):
                continue
            p = producer.get(a.index)
            if p is None or not fusible[p] or p in absorbed or p in tree or a.index in outputs:
                continue
            if readers.get(a.index) != [i]:
                continue
            tree.append(p)
            todo.append(p)
    return sorted(tree)


def _written_between(ops, tree, root):
    """True when an op between the tree's first op and its root writes (out=) into an array the tree
    reads: moving the tree's work to the root would read the new values."""
    reads = set()
    for i in tree:
        reads.update(ops[i].slots_read())
    members = set(tree)
    for i in range(tree[0], root):
        if i in members:
            continue
        op = ops[i]
        if "out" in op.kwargs or any(s in reads for s in op.slots_written()):
            return True
    return False


def _program(ops, tree, root, meta):
    """(PointwiseProgram, input slots) for the tree, or None when its dtypes do not fit one kernel."""
    step_of = {}
    steps, in_slots, in_dtypes = [], [], []
    floats = set()
    for i in tree:
        op = ops[i]
        operands = []
        for a in op.args:
            if isinstance(a, Slot):
                if a.index in step_of:
                    operands.append(("step", step_of[a.index]))
                    continue
                dt = meta[a.index][1]
                if a.index not in in_slots:
                    in_slots.append(a.index)
                    in_dtypes.append(dt)
                if dt != "bool":
                    floats.add(dt)
                operands.append(("in", in_slots.index(a.index)))
            else:
                operands.append(("const", a))
        if op.name == "where" and (operands[0][0] != "in" or in_dtypes[operands[0][1]] != "bool"):
            if not (operands[0][0] == "step" and steps[operands[0][1]][0] in COMPARISONS):
                return None                      # a where whose condition is not a bool array
        out_dt = meta[op.out.index][1]
        if out_dt != "bool" and op.name in COMPARISONS:
            return None
        if out_dt == "bool" and op.name not in COMPARISONS:
            return None                          # bool arithmetic: left to the kernels
        if out_dt != "bool":
            floats.add(out_dt)
        step_of[op.out.index] = len(steps)
        steps.append((op.name, tuple(operands)))
    if len(floats) != 1 or not in_slots:
        return None
    shapes = [tuple(meta[s][0]) for s in in_slots]
    return PointwiseProgram(in_dtypes, steps, meta[ops[root].out.index][1], floats.pop(), shapes), in_slots
