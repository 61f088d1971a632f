"""The CUDA backend's vision kernels (backends/cuda_backend/vision.py): nms and roi_align.

- over the NumPy-based CuPy stand-in (no RawKernel there, so the xp lowerings run): the NumPy
  backend's results and float64 references, through the kernel table and through tensorplug.vision.ops;
- the RawKernel path over a model of `cupy.RawKernel` that checks each launch against the kernel's C
  signature (argument count, pointer dtypes, exact scalar types, contiguity, launch shape);
- with real CuPy and NVRTC (no GPU; `pip install -e ".[cuda-check]"`): every CUDA source compiles as
  RawKernel compiles it;
- with a GPU: the RawKernels against the xp lowerings and the NumPy kernels.
"""
import re

import numpy as np
import pytest
from _real_cupy import nvrtc
from _standin import make_standin

import fake_cupy
import tensorplug as torch
import tensorplug.vision.ops as ops
from tensorplug.backends.cuda_backend import vision as cuda_vision
from tensorplug.backends.numpy_backend import vision as np_vision
from tensorplug.dispatch import registry
from tensorplug.testing.conformance.opdb.vision import nms_ref, roi_align_ref

TOL = {"float16": 5e-3, "float32": 2e-6, "float64": 1e-13}


@pytest.fixture
def k(standin_state):
    return make_standin().kernels


def dev(a):
    return fake_cupy.asarray(np.asarray(a))


def host(a):
    return fake_cupy.asnumpy(a)


def random_boxes(rng, n, dtype, integer=False):
    if integer:                  # IoUs are ratios of small integers: the same decisions in any dtype
        xy, wh = rng.integers(0, 20, (n, 2)), rng.integers(1, 9, (n, 2))
    else:
        xy, wh = rng.uniform(0, 30, (n, 2)), rng.uniform(0.5, 12, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(dtype)


# -- nms -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("n, thr", [(1, 0.5), (5, 0.5), (63, 0.3), (64, 0.5), (65, 0.0), (200, 0.5), (130, 1.0)])
def test_nms_matches_the_numpy_kernel(k, dtype, n, thr):
    """The kept indices equal the NumPy kernel's exactly, across 64-box mask words."""
    rng = np.random.default_rng(n)
    b = random_boxes(rng, n, dtype)
    s = rng.permutation(n).astype(dtype)
    got = host(k["nms"](dev(b), dev(s), thr))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np_vision.nms(b, s, thr))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nms_matches_the_float64_reference(k, dtype):
    rng = np.random.default_rng(7)
    b = random_boxes(rng, 150, dtype, integer=True)
    s = rng.integers(0, 30, 150).astype(dtype)             # many tied scores: the lower index first
    for thr in (0.0, 0.2, 0.5, 0.7):
        want = nms_ref(b.astype(np.float64), s.astype(np.float64), thr)
        np.testing.assert_array_equal(host(k["nms"](dev(b), dev(s), thr)), want)


def test_nms_edge_cases_match_the_numpy_kernel(k):
    """No boxes; NaN scores (last); NaN and degenerate boxes; non-contiguous inputs."""
    assert host(k["nms"](dev(np.zeros((0, 4), np.float32)), dev(np.zeros(0, np.float32)), 0.5)).shape == (0,)
    b = np.array([[0, 0, 4, 4], [1, 1, 5, 5], [0, 0, 4, 4], [np.nan, 0, 2, 2], [3, 3, 3, 3], [0, 0, 4.1, 4]],
                 dtype=np.float32)
    s = np.array([0.9, np.nan, 0.8, 0.95, 0.5, 0.9], dtype=np.float32)
    for thr in (0.0, 0.3, 0.9):
        np.testing.assert_array_equal(host(k["nms"](dev(b), dev(s), thr)), np_vision.nms(b, s, thr))
    big = random_boxes(np.random.default_rng(1), 80, np.float64)
    sc = np.random.default_rng(2).uniform(0, 1, 160)
    got = k["nms"](dev(big.T.copy()).T, dev(sc)[::2], 0.4)
    np.testing.assert_array_equal(host(got), np_vision.nms(big, sc[::2], 0.4))


def test_nms_mask_sets_the_bits_of_overlapping_later_boxes(standin_state):
    """Bit j % 64 of word (i, j // 64) is IoU(i, j) > threshold for j > i, and 0 for j <= i."""
    v = cuda_vision.VisionKernels(fake_cupy, lambda: None)
    rng = np.random.default_rng(4)
    b = random_boxes(rng, 140, np.float64, integer=True)
    mask = host(v.nms_mask(dev(b), 0.25))
    assert mask.dtype == np.uint64 and mask.shape == (140, 3)
    for i in range(140):
        for j in range(140):
            iw = max(min(b[i, 2], b[j, 2]) - max(b[i, 0], b[j, 0]), 0)
            ih = max(min(b[i, 3], b[j, 3]) - max(b[i, 1], b[j, 1]), 0)
            inter = iw * ih
            area_i, area_j = ((b[q, 2] - b[q, 0]) * (b[q, 3] - b[q, 1]) for q in (i, j))
            iou = inter / (area_i + area_j - inter)
            assert bool((int(mask[i, j // 64]) >> (j % 64)) & 1) == (j > i and iou > 0.25), (i, j)


def test_nms_greedy_pass_over_a_mask(standin_state):
    """Box 0 removes 1 and 65; 1 is removed so 2 survives although 1 overlaps it; 65 removes nothing."""
    v = cuda_vision.VisionKernels(fake_cupy, lambda: None)
    mask = np.zeros((70, 2), dtype=np.uint64)
    mask[0, 0], mask[0, 1] = np.uint64(1 << 1), np.uint64(1 << 1)   # 0 -> 1, 0 -> 65
    mask[1, 0] = np.uint64(1 << 2)                                     # 1 -> 2 (1 is gone: ignored)
    mask[65, 1] = np.uint64(1 << 3)                                    # 65 -> 67 (65 is gone: ignored)
    mask[3, 1] = np.uint64(1 << 5)                                     # 3 -> 69
    keep = host(v.nms_greedy(dev(mask), 70))
    assert np.flatnonzero(keep == 0).tolist() == [1, 65, 69]


# -- roi_align -----------------------------------------------------------------------------------------
def rois_for(rng, R, N, H, W, dtype):
    xy = rng.uniform(-3, max(W, H), (R, 2))
    wh = rng.uniform(0.2, 8, (R, 2))
    return np.concatenate([rng.integers(0, N, (R, 1)), xy, xy + wh], 1).astype(dtype)


ROI_CASES = [(1.0, 3, 2, -1, False), (1.0, 2, 3, 2, True), (0.5, 2, 2, 1, True), (0.25, 4, 4, -1, True),
             (2.0, 1, 1, 0, False), (1.0, 7, 5, 3, False)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("case", ROI_CASES, ids=repr)
def test_roi_align_matches_the_numpy_kernel_and_the_reference(k, dtype, case):
    rng = np.random.default_rng(len(repr(case)))
    x = rng.uniform(-2, 2, (2, 3, 9, 11)).astype(dtype)
    rois = rois_for(rng, 12, 2, 9, 11, dtype)
    got = k["roi_align"](dev(x), dev(rois), *case)
    assert got.dtype == np.dtype(dtype) and got.shape == (12, 3, case[1], case[2]) and got.flags.c_contiguous
    tol = TOL[dtype]
    np.testing.assert_allclose(host(got), np_vision.roi_align(x, rois, *case), rtol=tol, atol=tol)
    if dtype != "float16":           # (the reference's geometry is float64: float16 rounds it differently)
        np.testing.assert_allclose(host(got), roi_align_ref(x.astype(np.float64), rois.astype(np.float64), *case),
                                   rtol=tol * 10, atol=tol * 10)


def test_roi_align_of_no_rois_and_strided_input(k):
    x = np.random.default_rng(0).uniform(-1, 1, (1, 2, 5, 12))
    assert host(k["roi_align"](dev(x), dev(np.zeros((0, 5))), 1.0, 2, 2, -1, False)).shape == (0, 2, 2, 2)
    rois = np.array([[0, 0.5, 0.5, 4.0, 3.5], [0, -2.0, -2.0, 1.0, 9.0]])
    got = k["roi_align"](dev(x)[..., ::2], dev(rois), 1.0, 3, 3, 2, True)
    np.testing.assert_allclose(host(got), np_vision.roi_align(np.ascontiguousarray(x[..., ::2]), rois, 1.0, 3, 3, 2,
                                                              True), rtol=1e-13, atol=1e-14)


# -- through tensorplug.vision.ops on the stand-in -----------------------------------------------------
def test_vision_ops_on_the_standin_match_cpu(fakecuda):
    """nms, batched_nms and roi_align (and its gradient) on "fakecuda" equal cpu."""
    rng = np.random.default_rng(11)
    b = torch.tensor(random_boxes(rng, 50, np.float32))
    s = torch.tensor(rng.uniform(0, 1, 50).astype(np.float32))
    cls = torch.tensor(rng.integers(0, 3, 50))
    x = torch.tensor(rng.uniform(-1, 1, (2, 3, 8, 8)))
    rois = torch.tensor(rois_for(rng, 6, 2, 8, 8, np.float64))
    outs = {}
    for where in ("cpu", "fakecuda"):
        xx = x.detach().to(where).requires_grad_()
        y = ops.roi_align(xx, rois.to(where), (3, 3), 0.5, 2, True)
        (y * y).sum().backward()
        outs[where] = [ops.nms(b.to(where), s.to(where), 0.4), ops.batched_nms(b.to(where), s.to(where),
                                                                              cls.to(where), 0.4), y.detach(),
                       xx.grad]
    for a, g in zip(outs["cpu"], outs["fakecuda"]):
        assert g.device.type == "fakecuda"
        np.testing.assert_allclose(g.cpu().numpy(), a.numpy(), rtol=1e-12, atol=1e-13)


# -- the RawKernel path, over a model of cupy.RawKernel ---------------------------------------------------
C_DTYPES = {"float": "float32", "double": "float64", "int": "int32", "long long": "int64",
            "unsigned long long": "uint64", "unsigned char": "uint8", "bool": "bool"}
LAUNCHES = []


class ModelRawKernel:
    """cupy.RawKernel(code, name): a launch kernel(grid, block, args) is checked against the C
    signature of `name` in `code` (arrays for pointers, of the pointee's dtype and C-contiguous;
    NumPy scalars of exactly the parameter's type, as CuPy passes a Python int as a 64-bit value);
    outputs are left as they are (no values are computed)."""

    def __init__(self, code, name, options=(), backend="nvrtc"):
        m = re.search(r'extern "C" __global__ void ' + name + r"\((.*?)\)\s*\{", code, re.S)
        assert m, f"no extern \"C\" kernel {name} in the source"
        self.name, self.params = name, []
        for p in m.group(1).split(","):
            words = p.replace("*", " * ").split()
            pointer = "*" in words
            ctype = " ".join(w for w in words[:-1] if w not in ("const", "*"))
            self.params.append((words[-1], C_DTYPES[ctype], pointer))

    def __call__(self, grid, block, args, shared_mem=0):
        assert len(args) == len(self.params), (self.name, len(args), len(self.params))
        assert len(grid) <= 3 and all(isinstance(g, int) and g > 0 for g in grid), grid
        assert grid[0] < 2**31 and all(g < 65536 for g in grid[1:]), grid         # CUDA's grid limits
        assert all(isinstance(t, int) and t > 0 for t in block) and np.prod(block) <= 1024, block
        for (pname, dtype, pointer), a in zip(self.params, args):
            if pointer:
                assert isinstance(a, fake_cupy.ndarray) and a.dtype == np.dtype(dtype) and a.flags.c_contiguous, \
                    (self.name, pname, a)
            else:
                assert isinstance(a, np.generic) and a.dtype == np.dtype(dtype), (self.name, pname, type(a), a)
        LAUNCHES.append(self.name)


def model_module():
    import types
    xp = types.ModuleType(fake_cupy.__name__)
    xp.__dict__.update({n: v for n, v in vars(fake_cupy).items() if not n.startswith("__")})
    xp.__name__ = fake_cupy.__name__
    xp.RawKernel = ModelRawKernel
    return xp


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_raw_kernels_are_launched_as_their_signatures_say(standin_state, dtype):
    from tensorplug.backends.cuda_backend import CudaBackend
    kt = CudaBackend(modules=lambda: (model_module(), fake_cupy.cupyx), name="rawmodel",
                     device_type="rawmodelcuda").kernels
    LAUNCHES.clear()
    rng = np.random.default_rng(0)
    for n in (1, 64, 130):
        kt["nms"](dev(random_boxes(rng, n, dtype)), dev(rng.uniform(0, 1, n).astype(dtype)), 0.5)
    x = dev(rng.uniform(-1, 1, (2, 3, 6, 7)).astype(dtype))
    kt["roi_align"](x, dev(rois_for(rng, 5, 2, 6, 7, dtype)), 0.5, 2, 3, -1, True)
    kt["roi_align"](x.transpose(0, 1, 3, 2), dev(rois_for(rng, 1, 2, 7, 6, dtype)), 1.0, 1, 1, 2, False)
    c = {"float32": "float", "float64": "double"}[dtype]
    assert LAUNCHES == [f"tp_nms_mask_{c}", "tp_nms_greedy"] * 3 + [f"tp_roi_align_{c}"] * 2
    assert set(cuda_vision.sources()) >= set(LAUNCHES)


def test_float16_takes_the_xp_lowering_on_cupy(standin_state):
    """There is no float16 RawKernel: the nms mask and roi_align of float16 run the xp lowering (the
    greedy pass over the mask, dtype-free, is the RawKernel still)."""
    from tensorplug.backends.cuda_backend import CudaBackend
    kt = CudaBackend(modules=lambda: (model_module(), fake_cupy.cupyx), name="rawmodel",
                     device_type="rawmodelcuda").kernels
    LAUNCHES.clear()
    rng = np.random.default_rng(0)
    kt["nms"](dev(random_boxes(rng, 10, np.float16)), dev(np.arange(10, dtype=np.float16)), 0.5)
    x = rng.uniform(-1, 1, (1, 2, 5, 5)).astype(np.float16)
    rois = rois_for(rng, 3, 1, 5, 5, np.float16)
    got = kt["roi_align"](dev(x), dev(rois), 1.0, 2, 2, -1, True)
    np.testing.assert_allclose(host(got), np_vision.roi_align(x, rois, 1.0, 2, 2, -1, True), rtol=5e-3, atol=5e-3)
    assert LAUNCHES == ["tp_nms_greedy"]


# -- compiled with NVRTC, as RawKernel compiles (real CuPy, no GPU) ---------------------------------------
def compile_raw(sources):
    """{name: error} of the sources NVRTC rejects, compiled as cupy.RawKernel does (its options plus
    CuPy's -ftz=true, for sm_90; no CuPy headers)."""
    import cupy
    from cupy.cuda import compiler
    if "standin" in getattr(cupy, "__version__", ""):
        raise ImportError("cupy here is not CuPy")
    compiler._get_arch_for_options_for_nvrtc = lambda arch=None: ("-arch=compute_90", "ptx")
    failures = {}
    for name, src in sources:
        cupy.RawKernel(src, name)                    # the constructor takes (code, name) and compiles lazily
        try:
            compiler.compile_using_nvrtc(src, options=("-ftz=true",), arch="90")
        except compiler.CompileException as e:
            failures[name] = str(e)
    return failures


def test_every_raw_kernel_source_compiles_with_nvrtc():
    nvrtc(compile_raw)
    srcs = cuda_vision.sources()
    assert len(srcs) == 5
    assert compile_raw(list(srcs.items())) == {}


def test_the_raw_compile_check_can_fail():
    nvrtc(compile_raw)
    bad = 'extern "C" __global__ void tp_bad(float* y) { y[0] = no_such_function(1.0f); }'
    assert "no_such_function" in compile_raw([("tp_bad", bad)])["tp_bad"]


# -- on a GPU: the RawKernels against the xp lowerings and the NumPy kernels -----------------------------
def _gpu():
    registry.ensure_loaded()
    cuda = registry.compute["cuda"]
    ok, why = cuda.is_available()
    if not ok:
        pytest.skip(f"no usable CUDA backend here (nothing ran on a GPU): {why}")
    native = cuda_vision.VisionKernels(cuda.xp, lambda: cuda.kernels)
    ref = cuda_vision.VisionKernels(cuda.xp, lambda: cuda.kernels)
    ref.native = False
    return cuda.xp, native, ref


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_nms_kernels_equal_the_lowering_bit_for_bit(dtype):
    cp, native, ref = _gpu()
    rng = np.random.default_rng(0)
    for n in (1, 63, 64, 65, 1000, 3000):
        b = cp.asarray(random_boxes(rng, n, dtype))
        s = cp.asarray(rng.uniform(0, 1, n).astype(dtype))
        for thr in (0.0, 0.3, 0.7):
            m_nat, m_ref = native.nms_mask(b, thr), ref.nms_mask(b, thr)
            assert (cp.asnumpy(m_nat) == cp.asnumpy(m_ref)).all(), (n, thr)
            assert (cp.asnumpy(native.nms_greedy(m_nat, n)) == cp.asnumpy(ref.nms_greedy(m_ref, n))).all()
            np.testing.assert_array_equal(cp.asnumpy(native.nms(b, s, thr)),
                                          np_vision.nms(cp.asnumpy(b), cp.asnumpy(s), thr))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ROI_CASES, ids=repr)
def test_gpu_roi_align_kernel_equals_the_numpy_kernel(dtype, case):
    cp, native, ref = _gpu()
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (2, 16, 20, 24)).astype(dtype)
    rois = rois_for(rng, 40, 2, 20, 24, dtype)
    got = cp.asnumpy(native.roi_align(cp.asarray(x), cp.asarray(rois), *case))
    tol = TOL[dtype]
    np.testing.assert_allclose(got, np_vision.roi_align(x, rois, *case), rtol=tol, atol=tol)
    np.testing.assert_allclose(got, cp.asnumpy(ref.roi_align(cp.asarray(x), cp.asarray(rois), *case)), rtol=tol,
                               atol=tol)
