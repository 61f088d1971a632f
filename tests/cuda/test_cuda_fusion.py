"""The CUDA backend's pointwise fusion (backends/cuda_backend/fusion.py), checked without a GPU the way
test_cuda_kernel_sources.py checks fused.py: each program's kernel is called over
`cupy_kernel_model.array_module()` (CuPy's typing, broadcasting and code layout, on the NumPy stand-in),
and where CuPy and NVRTC are installed (`pip install -e ".[cuda-check]"`) every generated source must
compile with CuPy's headers and options, and real CuPy must parse every kernel's parameters.

The values are compared with NumPy on a GPU only (skipped elsewhere, with the reason).
"""
from __future__ import annotations

import cupy_kernel_model as model
import fake_cupy
import numpy as np
import pytest
from _real_cupy import nvrtc, real_cupy
from tensorplug.backends.cuda_backend import CudaBackend, fusion
from tensorplug.compiler.fusion import COMPARISONS, POINTWISE, PointwiseProgram

FLOATS = ("float32", "float64")
UNARY = sorted(n for n, k in POINTWISE.items() if k == 1)
BINARY = sorted(n for n, k in POINTWISE.items() if k == 2 and n not in COMPARISONS)


def _p(inputs, steps, dtype, fdt):
    return PointwiseProgram(list(inputs), steps, dtype, fdt)


def _programs():
    """(id, program, input shapes): every POINTWISE kernel, both float dtypes, broadcasting, bool
    inputs and results, constants of each Python type (int, float, bool, inf, nan, beyond float32)."""
    out = []
    for fdt in FLOATS:
        for name in UNARY:      # x * 0.75 + 0.25 -> name -> + x1 (a row broadcast)
            out.append((f"{name}-{fdt}", _p([fdt, fdt], [("mul", (("in", 0), ("const", 0.75))),
                                                        ("add", (("step", 0), ("const", 0.25))),
                                                        (name, (("step", 1),)), ("add", (("step", 2), ("in", 1)))],
                                            fdt, fdt), [(3, 4), (4,)]))
        for name in BINARY:     # name(x0, x1 - 2) * 3, with x1 a column
            out.append((f"{name}-{fdt}", _p([fdt, fdt], [("sub", (("in", 1), ("const", 2))),
                                                        (name, (("in", 0), ("step", 0))),
                                                        ("mul", (("step", 1), ("const", 3)))], fdt, fdt),
                        [(3, 4), (3, 1)]))
        for name in sorted(COMPARISONS):    # where(cmp(x0, 0.5), x0, -x1): a bool step feeding where
            out.append((f"{name}-{fdt}", _p([fdt, fdt], [(name, (("in", 0), ("const", 0.5))),
                                                        ("neg", (("in", 1),)),
                                                        ("where", (("step", 0), ("in", 0), ("step", 1)))], fdt, fdt),
                        [(2, 3, 4), (4,)]))
        # a bool input as where's condition and as an operand of float arithmetic (NumPy: 1.0 / 0.0)
        out.append((f"bool-in-{fdt}", _p(["bool", fdt], [("where", (("in", 0), ("in", 1), ("const", 0))),
                                                         ("add", (("step", 0), ("in", 0))),
                                                         ("mul", (("step", 1), ("const", True)))], fdt, fdt),
                    [(4,), (3, 4)]))
        # a bool result: where of two comparisons, selected by a bool input; and eq of two bools
        out.append((f"bool-where-{fdt}", _p([fdt, fdt, "bool"], [("gt", (("in", 0), ("in", 1))),
                                                                 ("le", (("in", 0), ("const", -1))),
                                                                 ("where", (("in", 2), ("step", 0), ("step", 1))),
                                                                 ("eq", (("step", 2), ("in", 2)))], "bool", fdt),
                    [(3, 4), (3, 4), (1, 4)]))
        # constants: inf, nan, a float32-overflowing int (inf there, as NumPy), a float condition
        out.append((f"consts-{fdt}", _p([fdt], [("minimum", (("in", 0), ("const", float("inf")))),
                                                ("maximum", (("step", 0), ("const", float("nan")))),
                                                ("add", (("in", 0), ("const", 10 ** 39))),
                                                ("where", (("in", 0), ("step", 2), ("step", 1)))], fdt, fdt),
                    [(5,)]))
        # one input, 0-d
        out.append((f"scalar-{fdt}", _p([fdt], [("exp", (("in", 0),)), ("pow", (("step", 0), ("const", 2)))],
                                        fdt, fdt), [()]))
    return out


PROGRAMS = _programs()
IDS = [pid for pid, _, _ in PROGRAMS]


@pytest.fixture
def xp(standin_state):
    return model.array_module()


def _inputs(program, shapes, make):
    return [make(s, dt) for s, dt in zip(shapes, program.inputs)]


def test_the_programs_cover_every_pointwise_kernel():
    for fdt in FLOATS:
        used = {name for _, p, _ in PROGRAMS if p.float_dtype == fdt for name, _ in p.steps}
        assert set(POINTWISE) - used == set(), (fdt, sorted(set(POINTWISE) - used))


@pytest.mark.parametrize("pid, program, shapes", PROGRAMS, ids=IDS)
def test_each_program_is_called_as_cupy_accepts(xp, pid, program, shapes):
    fused = fusion.fuse_pointwise(program, xp)
    assert fused is not None, program
    model.GENERATED.clear()
    r = fused(*_inputs(program, shapes, lambda s, dt: fake_cupy.ones(s, dtype=dt)))
    assert r.shape == np.broadcast_shapes(*shapes) and r.dtype == np.dtype(program.dtype)
    assert [name for name, _ in model.GENERATED] == [fusion.KERNEL_NAME]


def test_every_generated_source_compiles_with_nvrtc(xp):
    nvrtc(model.compile_sources)
    model.GENERATED.clear()
    for _, program, shapes in PROGRAMS:
        fusion.fuse_pointwise(program, xp)(*_inputs(program, shapes, lambda s, dt: fake_cupy.ones(s, dtype=dt)))
    sources = {src: f"{name}_{i}" for i, (name, src) in enumerate(model.GENERATED)}
    assert len(sources) >= len(PROGRAMS) - 2        # programs differing only in constants share a source
    failures = model.compile_sources([(name, src) for src, name in sources.items()])
    assert failures == {}, "\n\n".join(f"{n}:\n{e}" for n, e in failures.items())


def test_real_cupy_parses_every_kernel():
    """CuPy's own ElementwiseKernel (made without a GPU) takes the generated parameters and name."""
    cupy, _ = real_cupy()
    for _, program, _ in PROGRAMS:
        k = fusion.fuse_pointwise(program, cupy).elementwise_kernel
        assert isinstance(k, cupy.ElementwiseKernel)
        assert (k.nin, k.nout) == (len(program.inputs) + len(fusion.generate(program)[4]), 1)


def _f32(steps, inputs=("float32",), dtype="float32"):
    return _p(inputs, steps, dtype, "float32")


@pytest.mark.parametrize("program", [
    _f32([("no_such_kernel", (("in", 0),))]),
    _f32([("exp", (("in", 0), ("in", 0)))]),                     # wrong number of operands
    _f32([("exp", (("in", 1),))]),                               # no such input
    _f32([("exp", (("step", 0),))]),                             # a step read before it is computed
    _f32([("exp", (("out", 0),))]),                              # unknown operand kind
    _f32([("add", (("in", 0), ("const", 10 ** 400)))]),          # an int no float holds
    _f32([("add", (("in", 0), ("const", "1")))]),                # not a number
    _f32([]),                                                    # no steps
    _f32([("exp", (("const", 1.0),))], inputs=()),               # no input array: no loop size
    _f32([("exp", (("in", 0),))], inputs=("int64",)),            # an input of another dtype
    _f32([("exp", (("in", 0),))], dtype="float64"),              # a result of another float dtype
    _f32([("gt", (("in", 0), ("const", 0)))]),                   # a bool step as a float result
    _f32([("exp", (("in", 0),))], dtype="bool"),                 # a float step as a bool result
    _f32([("add", (("in", 0), ("in", 0)))], inputs=("bool",)),   # bool-only arithmetic
    _p(["float16"], [("exp", (("in", 0),))], "float16", "float16"),
], ids=lambda p: repr(p)[:60])
def test_what_it_cannot_express_answers_none(xp, program):
    assert fusion.fuse_pointwise(program, xp) is None


def test_kernels_are_cached_by_source(xp):
    def prog(c, name="mul"):
        return _f32([(name, (("in", 0), ("const", c))), ("exp", (("step", 0),))])
    a, b = fusion.fuse_pointwise(prog(0.5), xp), fusion.fuse_pointwise(prog(0.5), xp)
    assert a.elementwise_kernel is b.elementwise_kernel
    # constants are arguments: another value, the same compiled kernel
    assert fusion.fuse_pointwise(prog(3), xp).elementwise_kernel is a.elementwise_kernel
    assert fusion.fuse_pointwise(prog(0.5, "add"), xp).elementwise_kernel is not a.elementwise_kernel


def test_the_backend_method_delegates(standin_state):
    program = PROGRAMS[0][1]
    on_model = CudaBackend(modules=lambda: (model.array_module(), fake_cupy.cupyx), name="model",
                           device_type="modelcuda")
    assert callable(on_model.fuse_pointwise(program))
    # the NumPy-based stand-in has no ElementwiseKernel; a backend without CuPy has nothing at all
    assert CudaBackend(modules=fake_cupy.modules, name="s", device_type="s").fuse_pointwise(program) is None

    def no_cupy():
        raise ImportError("no cupy here")
    assert CudaBackend(modules=no_cupy, name="n", device_type="n").fuse_pointwise(program) is None


def test_the_kernel_runs_on_its_inputs_device(xp, monkeypatch):
    seen = []
    launch = model.ElementwiseKernel.__call__
    monkeypatch.setattr(model.ElementwiseKernel, "__call__",
                        lambda self, *a, **k: seen.append(fake_cupy.state().current) or launch(self, *a, **k))
    _, program, shapes = PROGRAMS[0]
    fused = fusion.fuse_pointwise(program, xp)
    with fake_cupy.cuda.Device(1):
        arrays = _inputs(program, shapes, lambda s, dt: fake_cupy.ones(s, dtype=dt))
    assert fake_cupy.state().current == 0
    fused(*arrays)
    assert seen == [1] and fake_cupy.state().current == 0


# -- on a GPU ------------------------------------------------------------------------------------------
def _gpu():
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    cuda = registry.compute["cuda"]
    ok, why = cuda.is_available()
    return cuda, ok, why


_CUDA, _OK, _WHY = _gpu()
_GPU = pytest.mark.skipif(not _OK, reason=f"no usable CUDA backend here (nothing ran on a GPU): {_WHY}")


def _reference(program, arrays):
    """The program in NumPy, op by op, with the semantics the fused kernel keeps."""
    ft = np.dtype(program.float_dtype).type
    fns = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
           "maximum": np.maximum, "minimum": np.minimum, "neg": np.negative, "exp": np.exp, "log": np.log,
           "sqrt": np.sqrt, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "abs": np.abs, "expm1": np.expm1,
           "log1p": np.log1p, "sigmoid": lambda x: ft(1) / (ft(1) + np.exp(-x)), "gt": np.greater, "lt": np.less,
           "ge": np.greater_equal, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal, "where": np.where}
    vals = []
    with np.errstate(all="ignore"):
        for name, operands in program.steps:
            args = [arrays[v] if k == "in" else vals[v] if k == "step" else ft(v) for k, v in operands]
            if name == "where":
                args[0] = args[0].astype(bool)
            elif name not in COMPARISONS or any(np.asarray(a).dtype != bool for a in args):
                args = [np.asarray(a).astype(program.float_dtype) for a in args]
            vals.append(fns[name](*args))
    return np.asarray(vals[-1]).astype(program.dtype)


@_GPU
@pytest.mark.parametrize("pid, program, shapes", PROGRAMS, ids=IDS)
def test_fused_results_equal_numpy_on_the_gpu(pid, program, shapes):
    cp = _CUDA.xp
    rng = np.random.default_rng(0)

    def make(shape, dt):
        if dt == "bool":
            return rng.random(shape) < 0.5
        a = rng.uniform(-3, 3, shape).astype(dt)
        if a.size > 3:
            a.flat[:4] = (np.nan, np.inf, -np.inf, 0.0)
        return a
    host = _inputs(program, shapes, make)
    got = cp.asnumpy(_CUDA.fuse_pointwise(program)(*[cp.asarray(a) for a in host]))
    want = _reference(program, host)
    assert got.dtype == want.dtype and got.shape == want.shape
    if program.dtype == "bool":
        assert (got == want).all()
    else:
        tol = 2e-6 if program.float_dtype == "float32" else 1e-14
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@_GPU
def test_compiled_chains_fuse_on_the_gpu():
    import tensorplug as torch
    from tensorplug._dynamo.utils import counters
    torch._dynamo.reset()

    def f(a, b):
        return torch.where(a > 0, torch.sigmoid(a * 1.5) - b, torch.maximum(a, b) ** 2.0)
    try:
        x = torch.tensor(np.random.default_rng(1).uniform(-3, 3, (64, 128)), dtype=torch.float32, device="cuda")
        y = torch.tensor(np.random.default_rng(2).uniform(-3, 3, (128,)), dtype=torch.float32, device="cuda")
        cf = torch.compile(f)
        for _ in range(2):
            got = cf(x, y)
        assert counters["stats"]["fused_kernels"] >= 1
        np.testing.assert_allclose(got.cpu().numpy(), f(x, y).cpu().numpy(), rtol=2e-6, atol=2e-6)
    finally:
        torch._dynamo.reset()
