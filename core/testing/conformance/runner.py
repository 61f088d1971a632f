"""Build the list of checks for a backend, run them, and report.

Check ids (what `-k`, xfail lists and reports use):

    spi.attributes, spi.required                      the backend object and its kernel table
    <family>.<kernel>.forward[<dtype>]                values, dtype and shape against the reference
    <family>.<kernel>.out[<dtype>]                    out= of pointwise kernels
    <family>.<kernel>.view[<dtype>]                   aliasing of view kernels (and non-aliasing of copies)
    <family>.<kernel>.random[<dtype>]                 statistics and reproducibility of random kernels
    <family>.<kernel>.inplace[<dtype>]                kernels writing several arguments in place
                                                      (adam_step): the record's own check
    <family>.<kernel>.fallback[<dtype>]               an optional kernel through its decomposition
                                                      (for a kernel with no real decomposition, e.g.
                                                      rng_get_state: that the decomposition raises
                                                      NotImplementedError; so does .random when the
                                                      backend lacks the kernel)
    <family>.<kernel>.errors                          frontend inputs that must raise, on the device
    autograd.<op>.grad / autograd.<op>.gradgrad        derivatives of frontend ops vs finite differences
    device.<what>                                     creation, transfer, placement, generators, training
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

FAMILIES = ("spi", "creation", "random", "pointwise", "reduction", "movement", "indexing", "linalg", "optional",
            "nn", "autograd", "device")
STATUSES = ("passed", "failed", "xfailed", "xpassed", "skipped")


@dataclass
class Check:
    id: str
    family: str
    op: str
    kind: str
    dtype: str | None
    fn: Callable[[], None] = field(repr=False)


@dataclass
class Result:
    id: str
    family: str
    op: str
    kind: str
    dtype: str | None
    status: str
    message: str = ""
    seconds: float = 0.0


# -- resolving and selecting the backend -----------------------------------------------------------
def resolve(backend):
    """A registered compute backend: by name, or the object itself (registered for the run if needed)."""
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    if isinstance(backend, str):
        if backend in registry.compute:
            return registry.compute[backend]
        if backend in registry.communication:
            raise ValueError(f"{backend!r} is a communication backend; the conformance suite checks compute "
                             f"backends ({', '.join(sorted(registry.compute))})")
        raise LookupError(f"unknown backend {backend!r}; registered compute backends: "
                          f"{', '.join(sorted(registry.compute)) or 'none'}")
    return backend


@contextlib.contextmanager
def selected(backend):
    """Make `backend` serve its device type for the duration (registering it if it is not)."""
    from tensorplug.dispatch import hookimpl, registry
    registry.ensure_loaded()
    plugin_name = None
    if registry.compute.get(backend.name) is not backend:
        plugin_name = f"conformance-{backend.name}-{id(backend)}"

        class _Plugin:
            @hookimpl
            def tensorplug_register_backends(self, registry):
                registry.add(backend)
        registry.register_plugin(_Plugin(), name=plugin_name)
    dev = backend.device_type
    previous = registry._api_choices.get(dev)
    registry.use(backend.name)
    try:
        yield
    finally:
        registry.reset_selection(dev)
        if previous is not None and previous in registry.compute:
            registry._api_choices[dev] = previous
        if plugin_name is not None:
            registry.unregister_plugin(plugin_name)


def device_of(backend):
    import tensorplug
    return tensorplug.device(backend.device_type, 0 if getattr(backend, "indexed", True) else None)


def fallback_table(backend):
    """The backend's required primitives with every optional kernel decomposed."""
    from tensorplug.dispatch.backend_api import REQUIRED
    from tensorplug.dispatch.decompositions import complete_table
    backend.kernels                      # builds backend._native
    native = backend._native or {}
    return complete_table({n: f for n, f in native.items() if n in REQUIRED})


# -- the checks ------------------------------------------------------------------------------------
def _spi_attributes(backend):
    from tensorplug.dispatch.backend_api import API_VERSION
    from .checks import CheckFailure
    problems = []
    for attr in ("name", "device_type", "api_version", "dtypes", "version"):
        if not hasattr(backend, attr):
            problems.append(f"no attribute {attr!r}")
    if getattr(backend, "api_version", 0) > API_VERSION:
        problems.append(f"api_version {backend.api_version} is newer than this tensorplug's {API_VERSION}")
    from tensorplug import dtypes as _dtypes
    known = {d.name for d in _dtypes.ALL}
    unknown = set(getattr(backend, "dtypes", ())) - known
    if unknown:
        problems.append(f"unknown dtype names {sorted(unknown)}")
    if not {"float32", "int64", "bool"} <= set(getattr(backend, "dtypes", ())):
        problems.append("dtypes must include float32, int64 and bool")
    ok = backend.is_available()
    if not (isinstance(ok, tuple) and len(ok) == 2 and isinstance(ok[0], bool)):
        problems.append(f"is_available() returned {ok!r}, not (bool, reason)")
    if problems:
        raise CheckFailure(f"backend {backend.name!r}: " + "; ".join(problems))


def _spi_required(backend):
    from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED
    from .checks import CheckFailure
    table = backend.kernels
    missing = [n for n in REQUIRED if n not in table]
    bad = [n for n in (*REQUIRED, *OPTIONAL) if n in table and not callable(table[n])]
    if missing or bad:
        raise CheckFailure("; ".join(filter(None, [missing and f"missing required kernels: {', '.join(missing)}",
                                                   bad and f"not callable: {', '.join(bad)}"])))


def build_checks(backend) -> list[Check]:
    """Every check that applies to `backend`, in a stable order."""
    from . import checks as C
    from .frontend import DEVICE_CHECKS, GRAD_RECORDS, check_gradient
    from .opdb import RECORDS
    K = backend.kernels
    native = set(backend._native or ())
    dtypes = frozenset(backend.dtypes)
    if "bfloat16" in dtypes:            # sample values of "bfloat16" are NumPy arrays of ml_dtypes' type
        from tensorplug.dtypes import numpy_bfloat16
        numpy_bfloat16()
    dev = device_of(backend)
    fb = {}

    def fallback():
        if "table" not in fb:
            fb["table"] = fallback_table(backend)
        return fb["table"]

    out = [Check("spi.attributes", "spi", "backend", "attributes", None, lambda: _spi_attributes(backend)),
           Check("spi.required", "spi", "backend", "required", None, lambda: _spi_required(backend))]
    for rec in RECORDS.values():
        fam, name = rec.family, rec.name
        with_fallback = rec.kind == "optional" and name in native
        for dt in rec.dtypes:
            if dt not in dtypes:
                continue
            base = f"{fam}.{name}"
            if rec.multi_inplace is not None:
                out.append(Check(f"{base}.inplace[{dt}]", fam, name, "inplace", dt,
                                 lambda r=rec, d=dt: r.multi_inplace(K, d)))
                if with_fallback:
                    out.append(Check(f"{base}.fallback[{dt}]", fam, name, "fallback", dt,
                                     lambda r=rec, d=dt: r.multi_inplace(fallback(), d)))
                continue
            if rec.random is not None:
                if rec.fallback_raises is not None and rec.kind == "optional" and name not in native:
                    # no real decomposition: the backend's table must raise NotImplementedError cleanly
                    out.append(Check(f"{base}.random[{dt}]", fam, name, "random", dt,
                                     lambda r=rec: C.check_fallback_raises(K, r)))
                else:
                    out.append(Check(f"{base}.random[{dt}]", fam, name, "random", dt,
                                     lambda r=rec, d=dt: C.check_random(K, r, d, dtypes)))
                if with_fallback:
                    out.append(Check(f"{base}.fallback[{dt}]", fam, name, "fallback", dt,
                                     (lambda r=rec: C.check_fallback_raises(fallback(), r))
                                     if rec.fallback_raises is not None else
                                     (lambda r=rec, d=dt: C.check_random(fallback(), r, d, dtypes))))
                continue
            out.append(Check(f"{base}.forward[{dt}]", fam, name, "forward", dt,
                             lambda r=rec, d=dt: C.check_forward(K, r, d, dtypes)))
            if rec.supports_out:
                out.append(Check(f"{base}.out[{dt}]", fam, name, "out", dt,
                                 lambda r=rec, d=dt: C.check_out(K, r, d, dtypes)))
            if rec.view and (rec.kind != "optional" or name in native):
                # (an optional view kernel promises aliasing only where native: its decomposition may copy)
                out.append(Check(f"{base}.view[{dt}]", fam, name, "view", dt,
                                 lambda r=rec, d=dt: C.check_view(K, r, d, dtypes)))
            if with_fallback:
                out.append(Check(f"{base}.fallback[{dt}]", fam, name, "fallback", dt,
                                 lambda r=rec, d=dt: C.check_forward(fallback(), r, d, dtypes)))
        if rec.errors:
            out.append(Check(f"{fam}.{name}.errors", fam, name, "errors", None,
                             lambda r=rec: C.check_errors(r, dev)))
    has64 = "float64" in dtypes
    for g in GRAD_RECORDS.values():
        if g.available is not None and not g.available() or not set(g.needs) <= dtypes:
            continue
        for kind, second in (("grad", False), ("gradgrad", True)):
            if kind == "gradgrad" and not g.gradgrad:
                continue
            fn = (lambda g=g, s=second: check_gradient(g, dev, s)) if has64 else _skip("the backend has no float64")
            out.append(Check(f"autograd.{g.name}.{kind}", "autograd", g.name, kind, "float64", fn))
    for name, fn in DEVICE_CHECKS.items():
        out.append(Check(f"device.{name}", "device", name, name, None, lambda f=fn: f(backend, dev)))
    return out


def _skip(reason):
    def fn():
        from .checks import Skip
        raise Skip(reason)
    return fn


def glob_match(check_id: str, pattern: str) -> bool:
    """`*` matches any run of characters, `?` one character; everything else (brackets too) is literal,
    so `pointwise.*[float16]` matches every float16 pointwise check."""
    regex = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, check_id) is not None


def select(checks, patterns):
    """Checks whose id matches any pattern: a glob when it has `*` or `?`, else a substring."""
    if not patterns:
        return list(checks)
    if isinstance(patterns, str):
        patterns = [patterns]
    pats = [p for p in patterns if p]

    def match(cid):
        return any(glob_match(cid, p) if ("*" in p or "?" in p) else p in cid for p in pats)
    return [c for c in checks if match(c.id)]


# -- expected failures -----------------------------------------------------------------------------
def read_xfail_file(path) -> dict:
    """{pattern: reason} from a JSON object, or from lines `PATTERN  reason` (# starts a comment)."""
    text = open(path, encoding="utf-8").read()
    stripped = text.lstrip()
    if stripped.startswith("{"):
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object {{check id or glob: reason}}")
        return {str(k): str(v) for k, v in data.items()}
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            pat, _, reason = line.partition(" ")
            out[pat] = reason.strip() or "listed in " + str(path)
    return out


def collect_xfails(backend, extra=None, files=()) -> dict:
    """Expected failures from the plugins' tensorplug_conformance_xfails hook, files and `extra`."""
    from tensorplug.dispatch import registry
    found = {}
    for answer in registry.pm.hook.tensorplug_conformance_xfails(backend_name=backend.name):
        if answer:
            found.update({str(k): str(v) for k, v in dict(answer).items()})
    for f in files or ():
        found.update(read_xfail_file(f))
    found.update(extra or {})
    return found


def xfail_reason(check_id, xfails) -> str | None:
    for pat, reason in xfails.items():
        if check_id == pat or glob_match(check_id, pat):
            return reason
    return None


# -- running ---------------------------------------------------------------------------------------
DEFAULT_TIMEOUT = 60.0


class CheckTimeout(BaseException):
    """Raised in the main thread when a check runs past its timeout (in-process mode). A BaseException,
    so that a kernel's own `except Exception` does not swallow it."""


@contextlib.contextmanager
def _alarm(seconds, check):
    """SIGALRM after `seconds`, raising CheckTimeout where the check is. Ends hangs that return to the
    interpreter (sleeps, Python loops, lock waits), not C code holding the GIL: see worker.py."""
    import signal
    import threading
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        where = f"; it was in {frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})" if frame else ""
        raise CheckTimeout(f"{check.id}: timed out after {seconds:g} s: kernel {check.op!r} did not return{where}")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_check(check: Check, xfails=None, timeout=None) -> Result:
    """Run one check in this process; `timeout` seconds (None: no limit) through SIGALRM."""
    from .checks import Skip
    reason = xfail_reason(check.id, xfails or {})
    t0 = time.perf_counter()
    status, message = "passed", ""
    try:
        with _alarm(timeout, check):
            check.fn()
    except CheckTimeout as e:
        status, message = "failed", str(e)
    except Skip as e:
        status, message = "skipped", str(e)
    except AssertionError as e:
        status, message = "failed", str(e)
    except Exception as e:  # noqa: BLE001 - a crash inside a check is a failure of that check
        status, message = "failed", f"{check.id} raised {type(e).__name__}: {e}"
    if reason is not None:
        if status == "failed":
            status, message = "xfailed", f"{reason} | {message}"
        elif status == "passed":
            status, message = "xpassed", f"expected to fail ({reason}) but passed"
    return Result(check.id, check.family, check.op, check.kind, check.dtype, status, message,
                  round(time.perf_counter() - t0, 6))


@dataclass
class Report:
    backend: dict
    results: list

    @property
    def ok(self) -> bool:
        return not any(r.status == "failed" for r in self.results)

    def counts(self) -> dict:
        c = {s: 0 for s in STATUSES}
        for r in self.results:
            c[r.status] += 1
        return c

    def by_family(self) -> dict:
        fam = {}
        for r in self.results:
            row = fam.setdefault(r.family, {s: 0 for s in STATUSES})
            row[r.status] += 1
        order = {f: i for i, f in enumerate(FAMILIES)}
        return dict(sorted(fam.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def failures(self) -> list:
        return [r for r in self.results if r.status == "failed"]

    def to_dict(self) -> dict:
        return {"backend": self.backend, "ok": self.ok, "summary": self.counts(), "families": self.by_family(),
                "checks": [asdict(r) for r in self.results]}

    def write_json(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")

    def format_summary(self) -> str:
        """A table: one row per op family, counts per status, and a total."""
        cols = ("family", *STATUSES)
        rows = [[f, *(str(c[s]) for s in STATUSES)] for f, c in self.by_family().items()]
        total = self.counts()
        rows.append(["TOTAL", *(str(total[s]) for s in STATUSES)])
        header = [c.upper() for c in cols]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(cols))]

        def line(r):
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        return "\n".join([line(header), *(line(r) for r in rows[:-1]), "-" * len(line(header)), line(rows[-1])])

    def format_failures(self, limit: int | None = 50) -> str:
        lines = []
        fails = self.failures()
        for r in fails[:limit]:
            lines.append(f"FAILED {r.id}: {r.message}")
        if limit is not None and len(fails) > limit:
            lines.append(f"... and {len(fails) - limit} more failures (see --json)")
        return "\n".join(lines)


def backend_info(backend) -> dict:
    from tensorplug.dispatch import registry
    from tensorplug.dispatch.backend_api import API_VERSION
    return {"name": backend.name, "device_type": backend.device_type, "version": str(getattr(backend, "version", "?")),
            "api_version": getattr(backend, "api_version", None), "tensorplug_api_version": API_VERSION,
            "origin": registry.origin.get(backend.name, "runtime"), "dtypes": sorted(getattr(backend, "dtypes", ()))}


def discoverable(backend) -> bool:
    """Whether a fresh interpreter finds `backend` under its name (an entry point or a built-in)."""
    from tensorplug.dispatch import registry
    return registry.compute.get(backend.name) is backend and registry.origin.get(backend.name, "runtime") != "runtime"


def run_checks(backend, checks, xfails=None, timeout=None, on_start=None, on_result=None) -> list:
    """Results of `checks`, each limited to `timeout` seconds (None or 0: no limit).

    With a timeout, a discoverable backend's checks run in a child process that is killed when a check
    hangs, even inside C code holding the GIL (worker.py); a backend registered at run time exists only
    here, so its checks run in this process under SIGALRM, which ends hangs that return to Python."""
    if timeout and discoverable(backend) and os.name == "posix":
        from .worker import supervised
        return supervised(backend, checks, xfails or {}, timeout, on_start, on_result)
    results = []
    with selected(backend):
        for c in checks:
            if on_start is not None:
                on_start(c)
            r = run_check(c, xfails, timeout)
            results.append(r)
            if on_result is not None:
                on_result(c, r)
    return results


def run(backend, pattern=None, xfails=None, xfail_files=(), progress=None, timeout=None) -> Report:
    """Run the conformance suite on `backend` (a name or a Backend object) and return the Report.

    pattern: a substring or glob (or a list of them) selecting check ids; xfails: {id or glob: reason};
    progress(check, result) is called after each check; timeout: seconds per check (see run_checks)."""
    backend = resolve(backend)
    ok, reason = backend.is_available()
    if not ok:
        raise RuntimeError(f"backend {backend.name!r} is not available: {reason}")
    checks = select(build_checks(backend), pattern)
    expected = collect_xfails(backend, xfails, xfail_files)
    results = run_checks(backend, checks, expected, timeout, on_result=progress)
    return Report(backend_info(backend), results)
