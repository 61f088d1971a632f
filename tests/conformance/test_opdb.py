"""Meta-tests of the op database: a record for every kernel of the SPI, every record exercised, and
references that do not lean on the NumPy backend."""
from pathlib import Path

import numpy as np

import tensorplug.testing.conformance.opdb as opdb_pkg
from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED
from tensorplug.testing.conformance import build_checks, run
from tensorplug.testing.conformance.checks import samples_for
from tensorplug.testing.conformance.frontend import GRAD_RECORDS
from tensorplug.testing.conformance.opdb import RECORDS
from tensorplug.dtypes import numpy_bfloat16

ALL_DTYPES = frozenset(("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                        "bool", "complex64", "complex128"))
numpy_bfloat16()        # NumPy knows "bfloat16" (ml_dtypes) from here on: the records make samples of it


def test_every_kernel_has_a_record():
    """Each REQUIRED primitive and OPTIONAL kernel (conv and norm families included) has an op record."""
    missing = sorted((set(REQUIRED) | set(OPTIONAL)) - set(RECORDS))
    assert missing == [], f"kernels without an op record in tensorplug.testing.conformance.opdb: {missing}"


def test_every_record_is_a_kernel():
    """No record names a kernel the SPI does not have (a renamed kernel leaves no stale record)."""
    assert sorted(set(RECORDS) - set(REQUIRED) - set(OPTIONAL)) == []


def test_fallback_raises_only_for_kernels_without_a_decomposition():
    """Exactly the kernels of NO_FALLBACK (whose decompositions only raise NotImplementedError) declare
    fallback_raises, and their decompositions do raise it."""
    import pytest

    from tensorplug.dispatch.backend_api import NO_FALLBACK
    from tensorplug.dispatch.decompositions import complete_table
    declared = {r.name for r in RECORDS.values() if r.fallback_raises is not None}
    assert declared == set(NO_FALLBACK)
    from tensorplug.dispatch import registry
    native = registry.compute["numpy"].kernels
    K = complete_table({n: f for n, f in native.items() if n in REQUIRED})
    for name in NO_FALLBACK:
        with pytest.raises(NotImplementedError, match="cannot (export|import) generator state"):
            RECORDS[name].fallback_raises(K)


def test_records_are_well_formed():
    """Each record has dtypes, exactly one of a reference, a random check or a several-arrays in-place
    check, and (with a reference) samples for each of its dtypes."""
    for rec in RECORDS.values():
        assert rec.dtypes and set(rec.dtypes) <= ALL_DTYPES, rec.name
        assert [rec.ref, rec.random, rec.multi_inplace].count(None) == 2, rec.name
        if rec.ref is not None:
            for dt in rec.dtypes:
                assert samples_for(rec, dt, ALL_DTYPES), f"{rec.name} has no samples for {dt}"


def test_samples_cover_the_input_kinds():
    """Across the database: 0-d, empty, every non-contiguous layout, NaN/inf edge values."""
    from tensorplug.testing.conformance.opdb._base import A
    seen = set()

    def walk(x):
        if isinstance(x, A):
            v = x.value
            seen.add(x.layout)
            seen.add("0-d" if v.ndim == 0 else "empty" if v.size == 0 else "n-d")
            if v.dtype.kind == "f" and np.isnan(v).any():
                seen.add("nan")
            if v.dtype.kind == "f" and np.isinf(v).any():
                seen.add("inf")
        elif isinstance(x, (list, tuple)):
            for e in x:
                walk(e)
    for rec in RECORDS.values():
        for dt in rec.dtypes:
            for s in (rec.samples(dt, np.random.default_rng(0)) if rec.random is None else []):
                walk(s.args)
    assert {"C", "T", "S", "R", "B", "0-d", "empty", "nan", "inf"} <= seen


def test_every_record_produces_checks():
    """For the NumPy backend each record yields a forward (or random, or in-place) check per dtype,
    optional kernels a fallback check too, and every gradient record two checks."""
    from tensorplug.dispatch import registry
    ids = {c.id for c in build_checks(registry.compute["numpy"])}
    for rec in RECORDS.values():
        kind = "random" if rec.random else "inplace" if rec.multi_inplace else "forward"
        for dt in rec.dtypes:
            assert f"{rec.family}.{rec.name}.{kind}[{dt}]" in ids
            if rec.kind == "optional":
                assert f"{rec.family}.{rec.name}.fallback[{dt}]" in ids
        if rec.errors:
            assert f"{rec.family}.{rec.name}.errors" in ids
    for g in GRAD_RECORDS.values():
        if g.available is None or g.available():
            assert f"autograd.{g.name}.grad" in ids and f"autograd.{g.name}.gradgrad" in ids


def test_every_kernel_is_called_by_the_kernel_checks(backend_class):
    """Running the kernel-level checks on a backend that counts its kernel calls calls every kernel
    of the SPI: every record is exercised, not just listed."""
    backend = backend_class("counting", counting=True)()
    report = run(backend, pattern=[f"{f}.*" for f in ("creation", "random", "pointwise", "reduction", "movement",
                                                      "indexing", "linalg", "optional", "nn")] + ["spi."])
    assert report.results
    uncalled = sorted(n for n in (*REQUIRED, *OPTIONAL) if not backend.calls.get(n))
    assert uncalled == []


def test_references_do_not_use_the_numpy_backend():
    """The float64 references are written with NumPy directly, never with the backend under test."""
    for f in Path(opdb_pkg.__file__).parent.glob("*.py"):
        text = f.read_text()
        assert "numpy_backend" not in text and "tensorplug.backends" not in text, f.name
