"""Everything the CUDA backend uses of CuPy exists in real CuPy, with the keyword arguments it passes.

The CPU tests run the backend over fake_cupy, which takes whatever NumPy takes: a function or keyword
that CuPy lacks would pass there and fail on the first GPU. Here the whole conformance suite runs on
the backend over a recording proxy of the stand-in; every attribute reached through the array module,
cupyx and the arrays, and every keyword passed to a function, is then looked up in the installed CuPy
(importing CuPy needs no GPU). Skips, saying so, where CuPy is not installed (see _real_cupy.py).
"""
from __future__ import annotations

import inspect
import types

import fake_cupy
from _real_cupy import real_cupy
from tensorplug.backends.cuda_backend import CudaBackend
from tensorplug.testing.conformance import assert_conforms


class Recorder:
    def __init__(self):
        self.calls: dict[str, set[str]] = {}        # "xp.sum" -> keyword names passed
        self.array_attrs: set[str] = set()

    def proxy(self, target, path):
        return _Proxy(target, path, self)


class _Proxy:
    def __init__(self, target, path, rec):
        self.__dict__.update(_target=target, _path=path, _rec=rec)

    def __getattr__(self, name):
        value = getattr(self._target, name)
        if name.startswith("__"):
            return value
        path = f"{self._path}.{name}"
        calls = self._rec.calls.setdefault(path, set())
        if isinstance(value, (types.ModuleType, types.SimpleNamespace)):
            return _Proxy(value, path, self._rec)
        if callable(value) and not isinstance(value, type):
            def call(*args, **kwargs):
                calls.update(kwargs)
                return value(*args, **kwargs)
            return call
        return value


def _accepts(fn, keywords, cupy):
    """The keywords fn does not accept; None when its signature is unknown (compiled functions)."""
    if isinstance(fn, cupy.ufunc):          # documented: f(x1, ..., /, out=None, *, casting, dtype)
        return set(keywords) - {"out", "casting", "dtype"}
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = sig.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return set()
    return set(keywords) - {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def test_the_backend_uses_only_what_cupy_has(standin_state, monkeypatch):
    cupy, cupyx = real_cupy()
    rec = Recorder()
    xp, cx = rec.proxy(fake_cupy, "xp"), rec.proxy(fake_cupy.cupyx, "cx")
    plain = object.__getattribute__

    def recording(self, name):
        if not name.startswith("_"):
            rec.array_attrs.add(name)
        return plain(self, name)
    monkeypatch.setattr(fake_cupy.ndarray, "__getattribute__", recording)

    backend = CudaBackend(modules=lambda: (xp, cx), name="recorded", device_type="recordedcuda")
    report = assert_conforms(backend)
    assert report.ok and report.counts()["passed"] > 1000
    # what tensorplug.cuda reaches (device management, memory, properties, TF32)
    backend.set_device(1)
    assert backend.current_device() == 1 and backend.device_count() == 2
    backend.synchronize()
    backend.synchronize(0)
    assert backend.device_name(0) and len(backend.device_capability(0)) == 2
    assert backend.memory_allocated() >= 0
    backend.empty_cache()
    backend.set_allow_tf32(True)
    assert backend.tf32_enabled()
    backend.set_allow_tf32(False)

    missing, bad_keywords, unchecked = [], [], []
    for path, keywords in sorted(rec.calls.items()):
        root, *names = path.split(".")
        obj = cupy if root == "xp" else cupyx
        try:
            for n in names:
                obj = getattr(obj, n)
        except AttributeError:
            missing.append(path)
            continue
        if keywords and callable(obj):
            extra = _accepts(obj, keywords, cupy)
            if extra is None:
                unchecked.append(path)
            elif extra:
                bad_keywords.append(f"{path}({', '.join(sorted(extra))}=...)")
    missing += [f"ndarray.{a}" for a in sorted(rec.array_attrs) if not hasattr(cupy.ndarray, a)]
    from cupy._core import _routines_linalg as cublas_compute      # imported by name, not through xp
    missing += [f"cupy._core._routines_linalg.{n}" for n in (
        "set_compute_type", "get_compute_type", "COMPUTE_TYPE_TF32", "COMPUTE_TYPE_DEFAULT")
        if not hasattr(cublas_compute, n)]
    assert len(rec.calls) > 40 and len(rec.array_attrs) > 10
    assert missing == [], f"not in CuPy {cupy.__version__}: {missing}"
    assert bad_keywords == [], f"keywords CuPy {cupy.__version__} does not take: {bad_keywords}"
    print(f"checked {len(rec.calls)} names and the array attributes {sorted(rec.array_attrs)} against CuPy "
          f"{cupy.__version__}; keywords unverifiable (no signature): {unchecked}")


def test_the_keyword_check_can_fail():
    cupy, _ = real_cupy()
    assert _accepts(cupy.sum, {"axis", "keepdims", "no_such_keyword"}, cupy) == {"no_such_keyword"}
    assert _accepts(cupy.add, {"out", "where"}, cupy) == {"where"}     # CuPy ufuncs take no where=
