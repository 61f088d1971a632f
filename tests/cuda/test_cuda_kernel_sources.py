"""The CUDA side of fused.py, checked without a GPU.

The CUDA backend's kernel table is built over `cupy_kernel_model.array_module()` (the NumPy stand-in
plus a model of CuPy's ElementwiseKernel / ReductionKernel), so `Fusion` takes its CUDA lowering. Each
case calls the table's kernels the way the frontend does, for each dtype: CuPy's typing and shape rules
must accept every call, every fused kernel must be launched by some case, and, where CuPy and NVRTC
are installed (no GPU needed; `pip install -e ".[cuda-check]"`), every generated source must compile with
CuPy's own headers and options.

This proves the kernels are well-typed and compile; their values are compared with the xp lowering on
a GPU (test_cuda_gpu.py).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import cupy_kernel_model as model
import fake_cupy
from _real_cupy import nvrtc
from tensorplug.backends.cuda_backend import CudaBackend

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
FUSED = Path(__import__("tensorplug.backends.cuda_backend.fused", fromlist=["x"]).__file__)


@pytest.fixture
def table(standin_state):
    backend = CudaBackend(modules=lambda: (model.array_module(), fake_cupy.cupyx), name="model",
                          device_type="modelcuda")
    return backend.native_kernels()


def ones(shape, dtype):
    return fake_cupy.ones(shape, dtype=dtype)


def _unary(k):
    for name in ("sigmoid", "erf"):
        for dt in FLOATS:
            x = ones((2, 3), dt)
            k[name](x)
            k[name](x, fake_cupy.empty((2, 3), dtype=dt))


def _divmod(k):
    for name in ("floor_divide", "remainder", "fmod"):
        for dt in FLOATS + INTS:
            x, y = ones((2, 3), dt), ones((3,), dt)
            s = 2.5 if dt in FLOATS else 3
            k[name](x, y)
            k[name](x, s)
            k[name](s, y)
            k[name](x, y, fake_cupy.empty((2, 3), dtype=dt))


def _int_pow(k):
    for dt in INTS:
        x = ones((2, 3), dt)
        k["pow"](x, x)
        k["pow"](x, 2)
        k["pow"](2, x)
        k["pow"](x, x, fake_cupy.empty((2, 3), dtype=dt))


def _softmax(k):
    for dt in FLOATS:
        x = ones((2, 3, 4), dt)
        for axis in (-1, 0, 1):
            k["softmax"](x, axis)
            k["log_softmax"](x, axis)


def _batch_norm(k):
    for dt in FLOATS:
        for shape in ((4, 3), (4, 3, 5, 5)):
            x, c = ones(shape, dt), ones((3,), dt)
            for weight, bias in ((None, None), (c, c)):
                k["batch_norm"](x, weight, bias, None, None, 1e-5)        # training: batch statistics
                k["batch_norm"](x, weight, bias, c, c, 1e-5)              # eval: running statistics


def _max_pool(k):
    for dt in FLOATS + ("int32", "int64", "uint8"):
        x = ones((2, 3, 6, 6), dt)
        for padding, out_size in (((0, 0), (3, 3)), ((1, 1), (4, 4))):
            k["max_pool"](x, (2, 2), (2, 2), padding, (1, 1), out_size)


def _random(k):
    state = k["rng_new"](1234)
    for dt in FLOATS:
        k["uniform"](state, (3, 4), np.dtype(dt))
        k["normal"](state, (3, 4), np.dtype(dt))
        k["bernoulli"](state, ones((3, 4), dt))
    for dt in INTS:
        k["randint"](state, 0, 10, (5,), np.dtype(dt))
    k["randint"](state, -2 ** 40, 2 ** 40, (5,), np.dtype("int64"))
    k["randperm"](state, 10, np.dtype("int64"))


CASES = [_unary, _divmod, _int_pow, _softmax, _batch_norm, _max_pool, _random]


def _run_all(k):
    model.GENERATED.clear()
    for case in CASES:
        case(k)
    return list(model.GENERATED)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_the_backend_calls_its_fused_kernels_as_cupy_accepts(table, case):
    model.GENERATED.clear()
    case(table)                     # CuPy's typing and shape rules raise on a bad call
    assert model.GENERATED and all(name.startswith("tp_") for name, _ in model.GENERATED)


def test_every_fused_kernel_is_launched_by_a_case(table):
    text = FUSED.read_text()
    defined = {"tp_" + n for n in re.findall(r'self\._(?:ew|red)\(\("(\w+)"', text)}
    assert len(defined) >= 14, defined
    launched = {name for name, _ in _run_all(table)}
    assert defined - launched == set(), f"fused kernels no case launches: {sorted(defined - launched)}"


def test_the_model_refuses_what_cupy_refuses(standin_state):
    f32, f64 = ones((2,), "float32"), ones((2,), "float64")
    add = model.ElementwiseKernel("T x, T y", "T z", "z = x + y;", "tp_add")
    with pytest.raises(TypeError, match="Type is mismatched"):
        add(f32, f64)
    with pytest.raises(TypeError, match="Type is mismatched"):
        add(f32, f32, fake_cupy.empty((2,), dtype="float64"))
    with pytest.raises(ValueError, match="Out shape is mismatched"):      # an output must not broadcast
        add(ones((2, 3), "float32"), ones((2, 3), "float32"), fake_cupy.empty((1, 3), dtype="float32"))
    fixed = model.ElementwiseKernel("T x, int32 j", "T y", "y = x + j;", "tp_fixed")
    with pytest.raises(TypeError, match="Type is mismatched"):
        fixed(f32, fake_cupy.ones((2,), dtype="int64"))
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        fixed(f32, 2 ** 31)
    assert fixed(f32, np.int32(3)).dtype == np.float32
    red = model.ReductionKernel("T x", "float32 s", "x", "a + b", "s = a", "0", "tp_red", reduce_type="float")
    assert red(ones((2, 3, 4), "float16"), axis=1, keepdims=True).shape == (2, 1, 4)
    assert red(ones((2, 3, 4), "float16"), axis=(0, 2)).shape == (3,)


def test_every_generated_source_compiles_with_nvrtc(table):
    nvrtc(model.compile_sources)
    sources = list(dict((src, name) for name, src in _run_all(table)).items())
    assert len(sources) > 40
    failures = model.compile_sources([(name, src) for src, name in sources])
    assert failures == {}, "\n\n".join(f"{n}:\n{e}" for n, e in failures.items())


def test_the_compile_check_can_fail(standin_state):
    nvrtc(model.compile_sources)
    model.GENERATED.clear()
    model.ElementwiseKernel("T x", "T y", "y = no_such_function(x);", "tp_broken")(ones((2,), "float16"))
    failures = model.compile_sources(model.GENERATED)
    assert "no_such_function" in failures["tp_broken"]
