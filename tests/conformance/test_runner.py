"""The runner: wrong kernels are caught and named (op and dtype), views must alias, a backend with only
the required primitives passes through the decompositions, expected failures, selection, reports."""
import json

import numpy as np
import pytest

from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.dispatch import registry
from tensorplug.testing import conformance
from tensorplug.testing.conformance.runner import glob_match, read_xfail_file, select


def planted(name, **replace):
    """A NumPy backend named `name` whose kernels in `replace` are swapped for the given functions
    (each receives the original kernel first)."""
    class Planted(NumpyBackend):
        def native_kernels(self):
            k = dict(NumpyBackend.native_kernels(self))
            for kname, fn in replace.items():
                k[kname] = (lambda orig, fn: lambda *a, **kw: fn(orig, *a, **kw))(k[kname], fn)
            return k
    Planted.name = name
    return Planted()


def _wrong_for_int32(orig, x, y, out=None):
    r = orig(x, y, out=out)
    return r + 1 if getattr(r, "dtype", None) == np.int32 else r


def test_a_wrong_kernel_is_caught_and_named():
    """mul off by one for int32 only: exactly the int32 checks of mul fail, naming op, dtype and sample."""
    report = conformance.run(planted("bad_mul", mul=_wrong_for_int32), pattern="pointwise.mul.")
    failed = {r.id for r in report.failures()}
    assert failed == {"pointwise.mul.forward[int32]", "pointwise.mul.out[int32]"}
    msg = next(r.message for r in report.failures() if r.kind == "forward")
    assert msg.startswith("mul[int32]: sample 0") and "got" in msg and "expected" in msg
    assert not report.ok


def test_a_wrong_result_dtype_is_caught():
    """A kernel computing in float64 and returning float64 for float32 inputs fails on dtype."""
    report = conformance.run(planted("bad_exp", exp=lambda orig, x, out=None: np.exp(x.astype(np.float64))),
                             pattern="pointwise.exp.forward[float32]")
    (r,) = report.results
    assert r.status == "failed" and "dtype float64, expected float32" in r.message


def test_a_copying_view_kernel_fails_the_alias_check():
    """permute returning a copy passes forward (same values) but fails the view check."""
    report = conformance.run(planted("bad_permute", permute=lambda orig, x, axes: orig(x, axes).copy()),
                             pattern="movement.permute.*[float32]")
    status = {r.kind: r.status for r in report.results}
    assert status == {"forward": "passed", "view": "failed"}


def test_a_kernel_that_raises_is_a_failure_not_a_crash():
    def boom(orig, *a, **kw):
        raise ZeroDivisionError("planted")
    report = conformance.run(planted("bad_sum", sum=boom), pattern="reduction.sum.forward[float64]")
    assert "raised ZeroDivisionError: planted" in report.results[0].message


def test_a_bad_random_kernel_is_caught():
    """uniform that always draws the same numbers fails the reproducibility / statistics check."""
    report = conformance.run(planted("bad_rng", uniform=lambda orig, s, shape, dt: np.full(shape, 0.5, dt)),
                             pattern="random.uniform.random[float32]")
    assert report.results[0].status == "failed"


def test_a_wrong_native_optional_kernel_fails_natively_only():
    """A broken native softmax fails its forward checks while its fallback (decomposition) passes."""
    report = conformance.run(planted("bad_softmax", softmax=lambda orig, x, axis: orig(x, axis) * 2),
                             pattern="optional.softmax.*[float64]")
    status = {r.kind: r.status for r in report.results}
    assert status == {"forward": "failed", "fallback": "passed"}


def test_required_primitives_only_pass_through_decompositions(backend_class):
    """A backend without any optional kernel passes: every optional kernel runs as a decomposition."""
    from tensorplug.dispatch.backend_api import OPTIONAL
    backend = backend_class("required_only", drop=tuple(OPTIONAL))()
    assert set(backend.kernel_status().values()) == {"native", "decomposed"}
    report = conformance.run(backend, pattern=["optional.", "nn.", "autograd.softmax", "device."],
                             xfail_files=[conformance_known_failures()])
    assert report.ok, report.format_failures()
    assert not any(r.kind == "fallback" for r in report.results)      # nothing native to compare
    assert report.counts()["passed"] > 50


def conformance_known_failures():
    """Known failures of backends built on the NumPy primitives without optional kernels."""
    from pathlib import Path
    return Path(__file__).resolve().parents[2] / "examples" / "trace_backend" / "tests" / "known_failures.txt"


def test_missing_required_kernel_fails_spi_check(backend_class):
    """A table without a required primitive fails spi.required, naming it."""
    from tensorplug.testing.conformance.runner import run_check
    backend = backend_class("no_where", drop=("where",))()
    (spi,) = [c for c in conformance.build_checks(backend) if c.id == "spi.required"]
    r = run_check(spi)
    assert r.status == "failed" and "missing required kernels: where" in r.message


def test_an_unregistered_backend_object_is_registered_for_the_run():
    """run(Backend()) works for an object no plugin registered, and leaves the registry as it was."""
    before = set(registry.compute)
    report = conformance.run(planted("loose"), pattern="device.results_stay")
    assert report.ok and set(registry.compute) == before


def test_selection_is_restored(add_backend):
    """Checking a lower-priority cpu backend selects it for the run only."""
    add_backend("numpy_low", priority=-5)
    assert registry.backend_for("cpu").name == "numpy"
    report = conformance.run("numpy_low", pattern="device.creation")
    assert report.ok
    assert registry.backend_for("cpu").name == "numpy"


def test_xfails_from_files_hooks_and_arguments(tmp_path):
    """Expected failures come from files (text or JSON), the plugin hook and arguments; an expected
    failure that passes is reported as xpassed, never as a failure."""
    from tensorplug.dispatch import hookimpl
    text = tmp_path / "x.txt"
    text.write_text("# comment\npointwise.mul.forward[int32]  off by one (planted)\n")
    assert read_xfail_file(text) == {"pointwise.mul.forward[int32]": "off by one (planted)"}
    js = tmp_path / "x.json"
    js.write_text(json.dumps({"pointwise.mul.out[*]": "why"}))
    assert read_xfail_file(js) == {"pointwise.mul.out[*]": "why"}

    class Hook:
        @hookimpl
        def tensorplug_conformance_xfails(self, backend_name):
            return {"pointwise.mul.forward[int64]": "from the hook"} if backend_name == "bad_mul2" else None
    registry.register_plugin(Hook(), name="xfail-hook")
    report = conformance.run(planted("bad_mul2", mul=_wrong_for_int32), pattern="pointwise.mul.",
                             xfail_files=[text, js])
    by = {r.id: r.status for r in report.results}
    assert by["pointwise.mul.forward[int32]"] == "xfailed"
    assert by["pointwise.mul.forward[int64]"] == "xpassed"
    assert by["pointwise.mul.out[float32]"] == "xpassed"
    assert report.ok


def test_patterns():
    """-k: substrings, or globs where * and ? are wildcards and brackets literal."""
    assert glob_match("pointwise.add.forward[float16]", "pointwise.*[float16]")
    assert not glob_match("pointwise.add.forward[float32]", "pointwise.*[float16]")
    assert glob_match("pointwise.add.forward[int8]", "*.add.*[int?]")

    class C:
        def __init__(self, id):
            self.id = id
    checks = [C("pointwise.add.forward[int8]"), C("reduction.sum.forward[int8]"), C("device.creation")]
    assert [c.id for c in select(checks, "add")] == ["pointwise.add.forward[int8]"]
    assert [c.id for c in select(checks, ["device", "*.sum.*"])] == ["reduction.sum.forward[int8]", "device.creation"]
    assert len(select(checks, None)) == 3


def test_report_json_and_summary(tmp_path):
    """The report: per-family counts, a summary table, JSON with every check."""
    report = conformance.run("numpy", pattern="pointwise.add.")
    path = tmp_path / "r.json"
    report.write_json(path)
    data = json.loads(path.read_text())
    assert data["backend"]["name"] == "numpy" and data["ok"] is True
    assert data["families"]["pointwise"]["passed"] == len(data["checks"]) - data["summary"]["skipped"]
    assert {"id", "family", "op", "kind", "dtype", "status", "message", "seconds"} <= set(data["checks"][0])
    table = report.format_summary()
    assert table.splitlines()[0].split() == ["FAMILY", "PASSED", "FAILED", "XFAILED", "XPASSED", "SKIPPED"]
    assert table.splitlines()[-1].startswith("TOTAL")


def test_assert_conforms():
    with pytest.raises(AssertionError, match=r"pointwise.mul.forward\[int32\]"):
        conformance.assert_conforms(planted("bad_mul3", mul=_wrong_for_int32), pattern="pointwise.mul.forward")
    assert conformance.assert_conforms("numpy", pattern="pointwise.sub.forward").ok


def test_unknown_and_communication_names():
    with pytest.raises(LookupError, match="unknown backend 'nosuch'.*numpy"):
        conformance.run("nosuch")
    from tensorplug.dispatch import CommunicationBackend, hookimpl

    class Comm(CommunicationBackend):
        name = "fakecomm2"

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add_communication(Comm())
    registry.register_plugin(Plugin(), name="fakecomm2-plugin")
    with pytest.raises(ValueError, match="communication backend"):
        conformance.run("fakecomm2")


def test_a_backend_without_float64_skips_gradient_checks(backend_class):
    cls = backend_class("no_f64")
    cls.dtypes = frozenset(cls.dtypes) - {"float64"}
    report = conformance.run(cls(), pattern=["autograd.exp.", "pointwise.exp.forward"])
    status = {r.id: r.status for r in report.results}
    assert status["autograd.exp.grad"] == "skipped" and "pointwise.exp.forward[float64]" not in status
    assert status["pointwise.exp.forward[float32]"] == "passed"
