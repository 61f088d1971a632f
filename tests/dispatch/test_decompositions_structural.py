"""The structural decompositions (dispatch/decompositions_structural.py): the conformance records of
their kernels run through them on tables that lack the native kernels, and the cases the records
leave out (wide padding, vector right-hand sides, singular batches, long scans)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.backends.numpy_backend.kernels import build
from tensorplug.dispatch import decompositions_structural as DS
from tensorplug.dispatch.backend_api import REQUIRED, STRUCTURAL
from tensorplug.dispatch.decompositions import complete_table
from tensorplug.testing.conformance import checks as C
from tensorplug.testing.conformance import run
from tensorplug.testing.conformance.opdb import RECORDS

DTYPES = NumpyBackend.dtypes


@pytest.fixture(scope="module", autouse=True)
def _bfloat16():
    from tensorplug.dtypes import numpy_bfloat16
    numpy_bfloat16()            # the records' bfloat16 samples are ml_dtypes arrays


@functools.lru_cache(maxsize=None)
def _native():
    return build()


def _without_structural():
    """NumPy's kernels except the structural ones, which are bound to their decompositions."""
    K = {k: v for k, v in _native().items() if k not in STRUCTURAL}
    K.update({n: functools.partial(getattr(DS, n), K) for n in STRUCTURAL})
    return K


def _required_only():
    """NumPy's 40 required kernels; everything else decomposed (the pointwise ones too)."""
    return complete_table({k: v for k, v in _native().items() if k in REQUIRED})


TABLES = {"without-structural": _without_structural, "required-only": _required_only}


@pytest.mark.parametrize("table", list(TABLES))
@pytest.mark.parametrize("name", STRUCTURAL)
def test_conformance_records_pass_through_the_decomposition(name, table):
    """Every sample of the kernel's record, every dtype it covers, through the decomposition."""
    K = TABLES[table]()
    assert K[name].func is getattr(DS, name)
    rec = RECORDS[name]
    ran = 0
    for dt in rec.dtypes:
        if dt in DTYPES:
            C.check_forward(K, rec, dt, DTYPES)
            ran += 1
    assert ran >= 2


def test_only_required_and_decomposed_kernels_are_called():
    """The decompositions call version 2's required kernels, each other, and one decomposed
    pointwise kernel (abs, for the pivots of inv/solve) - nothing else."""
    used = set()

    class Recording(dict):
        def __getitem__(self, k):
            used.add(k)
            return dict.__getitem__(self, k)
    K = Recording({k: v for k, v in _native().items() if k not in STRUCTURAL})
    for n in STRUCTURAL:
        K[n] = functools.partial(getattr(DS, n), K)
    for n in STRUCTURAL:
        for dt in ("float32", "int64", "bool"):
            if dt in RECORDS[n].dtypes:
                C.check_forward(K, RECORDS[n], dt, DTYPES)
    assert used - set(REQUIRED) - set(STRUCTURAL) == {"abs"}
    assert set(STRUCTURAL) <= used


class _Decomposed(NumpyBackend):
    name = "numpy-without-structural"
    device_type = "structuraltest"

    def native_kernels(self):
        return {k: v for k, v in NumpyBackend.native_kernels(self).items() if k not in STRUCTURAL}


def test_conformance_run_on_a_backend_lacking_the_kernels():
    """The runner on a registered backend without them: forward checks and the frontend's error cases
    (singular inverse, out-of-range gather/scatter, ...) on its device, all through the decompositions."""
    b = _Decomposed()
    status = b.kernel_status()
    assert {status[n] for n in STRUCTURAL} == {"decomposed"}
    report = run(b, pattern=[f"{RECORDS[n].family}.{n}." for n in STRUCTURAL])
    assert report.ok, report.format_failures()
    kinds = {r.kind for r in report.results}
    assert {"forward", "errors"} <= kinds and len(report.results) > 150


def test_builtin_backend_keeps_its_native_kernels():
    """Decompositions run only where a kernel is missing: NumPy's table holds its own."""
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    status = registry.compute["numpy"].kernel_status()
    assert {status[n] for n in STRUCTURAL} == {"native"}


# -- cases beyond the records -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def K():
    return _required_only()


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_pad_modes_any_width(K, mode, np_mode):
    """Widths within the dimension (slices + concat) and wider (numpy.pad's periodic continuation)."""
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    for w in (((2, 1), (3, 0)), ((5, 7), (9, 2)), ((0, 0), (0, 4)), ((3, 3), (4, 4))):
        np.testing.assert_array_equal(K["pad"](x, w, mode, 0), np.pad(x, w, mode=np_mode))
    one = np.array([[2.5, -1.0]])
    np.testing.assert_array_equal(K["pad"](one, ((3, 2), (0, 0)), mode, 0), np.pad(one, ((3, 2), (0, 0)), np_mode))
    with pytest.raises(ValueError, match="unknown padding mode 'wrap'"):
        K["pad"](x, ((1, 1), (0, 0)), "wrap", 0)


def test_pad_constant_nan_and_zero_width_is_a_new_array(K):
    x = np.ones((2, 2), np.float32)
    got = K["pad"](x, ((1, 0), (0, 2)), "constant", float("nan"))
    np.testing.assert_array_equal(got, np.pad(x, ((1, 0), (0, 2)), constant_values=np.nan))
    same = K["pad"](x, ((0, 0), (0, 0)), "reflect", 0)
    same[0, 0] = 5
    assert x[0, 0] == 1


def test_solve_vector_rhs_and_broadcast_batches(K):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (2, 1, 4, 4)) + 4 * np.eye(4)
    b = rng.uniform(-1, 1, (3, 4, 2))
    np.testing.assert_allclose(K["solve"](a, b), np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
    v = rng.uniform(-1, 1, 4)
    np.testing.assert_allclose(K["solve"](a, v), np.linalg.solve(a, v), rtol=1e-12, atol=1e-12)
    assert K["solve"](a, v).shape == (2, 1, 4)


def test_inv_needs_pivoting_and_complex(K):
    """A zero leading entry needs a row swap; complex matrices pivot on |z|."""
    a = np.array([[0.0, 2.0, 1.0], [1.0, 0.0, 0.0], [3.0, 1.0, 5.0]])
    np.testing.assert_allclose(K["inv"](a), np.linalg.inv(a), rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(2)
    z = rng.standard_normal((5, 3, 3)) + 1j * rng.standard_normal((5, 3, 3))
    np.testing.assert_allclose(K["inv"](z), np.linalg.inv(z), rtol=1e-10, atol=1e-12)


def test_singular_matrix_in_a_batch_raises_like_numpy(K):
    a = np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 4.0]])])
    for fn, args in (("inv", (a,)), ("solve", (a, np.ones((2, 2, 1))))):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            K[fn](*args)
    assert K["inv"](np.zeros((0, 2, 2))).shape == (0, 2, 2)


def test_gather_broadcasts_and_scatter_takes_scalars_and_larger_src(K):
    rng = np.random.default_rng(3)
    x, idx = rng.standard_normal((1, 5)), rng.integers(0, 5, (3, 2))
    np.testing.assert_array_equal(K["gather"](x, idx, 1), np.take_along_axis(x, idx, 1))
    t = np.zeros((3, 4))
    K["scatter"](t, np.array([[1], [2], [0]]), 7.0, 1)
    np.testing.assert_array_equal(t, [[0, 7, 0, 0], [0, 0, 7, 0], [7, 0, 0, 0]])
    t = np.zeros((2, 3))
    src = np.arange(12.0).reshape(3, 4)
    K["scatter_add"](t, np.array([[0, 0], [2, 2]]), src, 1)            # src larger than idx: its corner
    np.testing.assert_array_equal(t, [[1, 0, 0], [0, 0, 9]])


def test_long_scans_match_float64(K):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1001, 3)).astype(np.float32)
    for axis in (0, 1):
        np.testing.assert_allclose(K["cumsum"](x, axis), np.cumsum(x.astype(np.float64), axis), rtol=1e-5, atol=1e-4)
    p = rng.uniform(0.99, 1.01, 777)
    np.testing.assert_allclose(K["cumprod"](p, 0), np.cumprod(p), rtol=1e-12)
    w = rng.integers(-100, 100, 300).astype(np.int8)                  # wraps as the native kernel
    np.testing.assert_array_equal(K["cumsum"](w, 0), np.add.accumulate(w, dtype=np.int8))
    import ml_dtypes
    ones = np.ones(1000, dtype=ml_dtypes.bfloat16)                     # accumulated in float32
    assert float(K["cumsum"](ones, 0)[-1]) == 1000.0


def test_prod_dtype_wrap_and_keepdims(K):
    x = np.arange(1, 40, dtype=np.int8).reshape(3, 13)
    np.testing.assert_array_equal(K["prod"](x, (1,), True), np.multiply.reduce(x, axis=1, keepdims=True, dtype=np.int8))
    b = np.array([[True, False], [True, True]])
    got = K["prod"](b, (1,), False, dtype="int64")
    assert got.dtype == np.int64 and got.tolist() == [0, 1]
    y = np.random.default_rng(5).uniform(0.5, 1.5, (4, 5, 6))
    np.testing.assert_allclose(K["prod"](y, (2, 0), False), np.prod(y, axis=(0, 2)), rtol=1e-12)
    assert K["prod"](np.zeros((2, 0)), (1,), False).tolist() == [1.0, 1.0]


def test_argmax_argmin_first_nan_and_first_tie(K):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, -1.0]])
    assert K["argmax"](x, 1, False).tolist() == [1, 1]
    assert K["argmin"](x, 1, False).tolist() == [1, 3]
    r = K["argmax"](x, None, True)
    assert r.shape == (1, 1) and r.dtype == np.int64 and int(r[0, 0]) == 1
    # long flat inputs take the two-level (blocks of sqrt(n)) path
    big = np.random.default_rng(7).integers(0, 50, (7, 1433)).astype(np.float32)
    for v in (big, np.where(big == 3, np.nan, big), big.astype(np.int16)):
        for fn, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
            got = K[fn](v, None, False)
            assert got.shape == () and int(got) == int(ref(v)), fn


def test_nonzero_and_any_all(K):
    x = np.random.default_rng(6).integers(-1, 2, (3, 4, 5))
    for got, want in zip(K["nonzero"](x), np.nonzero(x)):
        np.testing.assert_array_equal(got, want)
    assert K["nonzero"](np.array(3.0)) == ()
    f = np.array([[0.0, -0.0], [np.nan, 0.0]])
    assert K["any"](f, (1,), False).tolist() == [False, True]
    assert K["all"](f, None, True).tolist() == [[False]]
    assert K["all"](np.zeros((0, 2)), (0,), False).tolist() == [True, True]
