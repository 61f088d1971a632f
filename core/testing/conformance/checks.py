"""Kernel-level checks: run a record's samples through a kernel table and compare with the reference.

Every check raises `CheckFailure` (an AssertionError) with a message naming the kernel, dtype and
sample, or `Skip` when it does not apply. Inputs are built with the table's `from_numpy` (and its view
kernels for non-contiguous layouts); results are read back with `to_numpy`.
"""
from __future__ import annotations

import warnings

import numpy as np

from .opdb._base import COMPLEX, FLOAT, REAL_OF, A, Raw, ref_args, rng_for


class CheckFailure(AssertionError):
    """A conformance check found a difference."""


class Skip(Exception):
    """The check does not apply (a dtype the backend does not declare, ...)."""


# -- arrays ----------------------------------------------------------------------------------------
def dtname(x) -> str:
    d = getattr(x, "dtype", None)
    return getattr(d, "name", str(d))


def host(K, x) -> np.ndarray:
    """A NumPy copy of backend array x."""
    return np.array(K["to_numpy"](x), copy=True)


def build(K, a: A):
    """Backend array with a.value's values, laid out as a.layout asks."""
    v = a.value
    lay = a.layout
    if lay == "C":
        return K["from_numpy"](np.array(v, copy=True))
    if lay == "T":
        axes = tuple(reversed(range(v.ndim)))
        return K["permute"](K["from_numpy"](np.ascontiguousarray(v.transpose(axes))), axes)
    if lay == "S":
        big = np.empty(v.shape[:-1] + (2 * v.shape[-1],), dtype=v.dtype)
        big[..., ::2] = v
        big[..., 1::2] = v[..., ::-1] if v.dtype != np.bool_ else ~v
        return K["slice"](K["from_numpy"](big), (Ellipsis, slice(None, None, 2)))
    if lay == "R":
        return K["slice"](K["from_numpy"](np.ascontiguousarray(v[::-1])), (slice(None, None, -1),))
    if lay == "B":
        return K["broadcast_to"](K["from_numpy"](np.array(v[:1], copy=True)), v.shape)
    raise ValueError(f"unknown layout {lay!r}")


def materialize(K, arg, built=None):
    """Sample argument -> kernel argument (A -> backend array, Raw -> the NumPy array, containers
    recursively). `built` collects (A, backend array) pairs."""
    if isinstance(arg, A):
        b = build(K, arg)
        if built is not None:
            built.append((arg, b))
        return b
    if isinstance(arg, Raw):
        return arg.value.copy() if not arg.value.flags.writeable else arg.value
    if isinstance(arg, tuple):
        return tuple(materialize(K, a, built) for a in arg)
    if isinstance(arg, list):
        return [materialize(K, a, built) for a in arg]
    return arg


def quiet():
    """NumPy-style floating-point warnings are expected on edge values."""
    class _Q:
        def __enter__(self):
            self.w = warnings.catch_warnings()
            self.w.__enter__()
            warnings.simplefilter("ignore")
            self.e = np.errstate(all="ignore")
            self.e.__enter__()

        def __exit__(self, *exc):
            self.e.__exit__(*exc)
            self.w.__exit__(*exc)
            return False
    return _Q()


# -- comparison ------------------------------------------------------------------------------------
def _fmt(v):
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return repr(v.item() if hasattr(v, "item") else v)


def compare_arrays(got: np.ndarray, want: np.ndarray, tol, dtype, inputs=None) -> str | None:
    """None when equal (within tol for floats, NaN equal to NaN, infinities exact), else a message."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.size == 0:
        return None
    if dtype in COMPLEX or (got.dtype.kind == "c" and dtype == "exact"):
        # each part compared as floats (NaN equal to NaN, infinities exact), or the values within tol of
        # each other relative to the magnitude (a tiny part of a large value carries the large one's error)
        near = np.zeros(got.shape, dtype=bool)
        if dtype in COMPLEX:
            g, w = got.astype(np.complex128), want.astype(np.complex128)
            with np.errstate(all="ignore"):
                near = np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= tol[1] + tol[0] * np.abs(w))
        for part in ("real", "imag"):
            g_part, w_part = np.array(getattr(got, part), copy=True), np.asarray(getattr(want, part))
            g_part[near] = w_part[near]
            err = compare_arrays(g_part, w_part, tol, REAL_OF.get(dtype, dtype),
                                 [getattr(np.asarray(x), part) for x in inputs] if inputs else None)
            if err:
                return f"{part} parts: {err}"
        return None
    if dtype in FLOAT:
        g, w = got.astype(np.float64), want.astype(np.float64)
        rtol, atol = tol
        with np.errstate(all="ignore"):
            close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        close |= (g == w)
        what = f"(rtol {rtol:g}, atol {atol:g})"
    else:
        close = got == want
        if got.dtype.kind in "fV" and want.dtype.kind in "fV":     # (V: ml_dtypes' bfloat16)
            close |= np.isnan(got) & np.isnan(want)
        what = "(exact)"
    if close.all():
        return None
    bad = np.argwhere(~close)
    first = tuple(int(i) for i in bad[0]) if got.ndim else ()
    msg = (f"{len(bad)} of {got.size} values differ {what}; first at index {first}: got {_fmt(got[first])}, "
           f"expected {_fmt(want[first])}")
    if inputs:
        try:
            shown = [_fmt(np.broadcast_to(x, got.shape)[first]) for x in inputs]
            msg += f" (inputs there: {', '.join(shown)})"
        except ValueError:
            pass
    return msg


def _expected_outputs(rec, sample, dtype):
    with quiet():
        want = rec.ref(*ref_args(sample.args), **sample.kwargs)
    dts = rec.result_dtypes(dtype, sample)
    wants = list(want) if isinstance(want, (tuple, list)) else [want]
    dts = list(dts) if isinstance(dts, (tuple, list)) else [dts] * len(wants)
    return wants, dts


def _cast(want, dt):
    with quiet():
        return np.asarray(want).astype(dt)


def _is_array(x):
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic)


def _sample_label(i, sample):
    return f"sample {i} ({sample.describe()})"


def samples_for(rec, dtype, backend_dtypes):
    """The record's samples for `dtype`, without those needing dtypes the backend lacks."""
    out = rec.samples(dtype, rng_for(rec.name, dtype))
    return [s for s in out if all(d in backend_dtypes for d in s.needs)]


def run_sample(K, rec, dtype, sample) -> str | None:
    """Run one sample; None when it conforms, else what is wrong."""
    built = []
    args = materialize(K, sample.args, built)
    kwargs = {k: materialize(K, v, built) for k, v in sample.kwargs.items()}
    try:
        with quiet():
            result = K[rec.name](*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - any exception is a finding
        return f"raised {type(e).__name__}: {e}"
    if rec.inplace is not None:
        outs = [args[rec.inplace]]
    elif isinstance(result, (tuple, list)):
        outs = list(result)
    else:
        outs = [result]
    wants, dts = _expected_outputs(rec, sample, dtype)
    if len(outs) != len(wants):
        return f"returned {len(outs)} outputs, expected {len(wants)}"
    inputs = [a.value for a, _ in built] if rec.family == "pointwise" else None
    for j, (out, want, dt) in enumerate(zip(outs, wants, dts)):
        label = f"output {j}: " if len(outs) > 1 else ""
        if want is None:
            if out is not None:
                return f"{label}returned {type(out).__name__}, expected None"
            continue
        if rec.name == "to_numpy":
            if not isinstance(out, np.ndarray):
                return f"returned {type(out).__name__}, not a numpy.ndarray"
            got = np.array(out, copy=True)
        else:
            if not _is_array(out):
                return f"{label}returned {type(out).__name__} {out!r}, not an array (0-d results are arrays)"
            if dtname(out) != dt:
                return f"{label}dtype {dtname(out)}, expected {dt}"
            if tuple(out.shape) != np.shape(want):
                return f"{label}shape {tuple(out.shape)}, expected {np.shape(want)}"
            try:
                got = host(K, out)
            except Exception as e:  # noqa: BLE001
                return f"{label}to_numpy of the result raised {type(e).__name__}: {e}"
        if got.dtype.name != dt and rec.name == "to_numpy":
            return f"to_numpy gave dtype {got.dtype.name}, expected {dt}"
        tol = rec.tolerance(dt)
        err = compare_arrays(got, _cast(want, dt), tol, dt, inputs)
        if err:
            return label + err
    return None


def _run_all(K, rec, dtype, samples, runner):
    fails = []
    for i, s in enumerate(samples):
        msg = runner(K, rec, dtype, s)
        if msg:
            fails.append(f"{_sample_label(i, s)}: {msg}")
    if fails:
        more = f"\n  ... and {len(fails) - 3} more failing samples" if len(fails) > 3 else ""
        raise CheckFailure(f"{rec.name}[{dtype}]: " + "\n  ".join(fails[:3]) + more)


def _run_compare(K, rec, dtype, sample):
    """Like run_sample, but with the record's own comparison (argsort's tie rules, ...)."""
    built = []
    args = materialize(K, sample.args, built)
    try:
        with quiet():
            result = K[rec.name](*args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001
        return f"raised {type(e).__name__}: {e}"
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    wants, dts = _expected_outputs(rec, sample, dtype)
    for out, dt in zip(outs, dts):
        if not _is_array(out):
            return f"returned {type(out).__name__}, not an array"
        if dtname(out) != dt:
            return f"dtype {dtname(out)}, expected {dt}"
    return rec.compare([host(K, o) for o in outs], [_cast(w, d) for w, d in zip(wants, dts)], sample, dtype)


# -- the checks ------------------------------------------------------------------------------------
def check_forward(K, rec, dtype, backend_dtypes):
    """Every sample: values, dtype and shape of the results against the float64 reference."""
    samples = samples_for(rec, dtype, backend_dtypes)
    if not samples:
        raise Skip(f"no samples for {dtype} with this backend's dtypes")
    _run_all(K, rec, dtype, samples, _run_compare if rec.compare else run_sample)


def check_out(K, rec, dtype, backend_dtypes):
    """out=: the result is written into a given array of the result's shape and dtype."""
    samples = [s for s in samples_for(rec, dtype, backend_dtypes)
               if not s.desc and all(isinstance(a, A) and a.layout == "C" and a.value.size for a in s.args)]
    if not samples:
        raise Skip("no sample with contiguous inputs")

    def runner(K, rec, dtype, sample):
        args = materialize(K, sample.args)
        wants, dts = _expected_outputs(rec, sample, dtype)
        out = K["full"](np.shape(wants[0]), 0, dts[0])
        try:
            with quiet():
                r = K[rec.name](*args, out=out)
        except Exception as e:  # noqa: BLE001
            return f"with out= raised {type(e).__name__}: {e}"
        want = _cast(wants[0], dts[0])
        err = compare_arrays(host(K, out), want, rec.tolerance(dts[0]), dts[0])
        if err:
            return f"the out= array: {err}"
        if r is None or not _is_array(r):
            return f"with out= returned {r!r}, not the out array"
        err = compare_arrays(host(K, r), want, rec.tolerance(dts[0]), dts[0])
        return f"the value returned with out=: {err}" if err else None
    _run_all(K, rec, dtype, samples[:2], runner)


def _fresh(shape, dtype, salt=0):
    """Values surely different from a sample's (for aliasing checks)."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return (np.arange(n) % 3 == salt % 3).reshape(shape)
    base = np.arange(n).reshape(shape) % 50 + 61 + salt
    return base.astype(dtype)


def check_view(K, rec, dtype, backend_dtypes):
    """View kernels alias their input: writes through the result reach the input ("write"), or writes
    to the input show in the result ("read"); "copy" kernels must not alias."""
    maker = rec.view_samples or rec.samples
    samples = [s for s in maker(dtype, rng_for(rec.name + "/view", dtype))
               if all(d in backend_dtypes for d in s.needs)]
    mode = rec.view

    def runner(K, rec, dtype, sample):
        built = []
        args = materialize(K, sample.args, built)
        with quiet():
            out = K[rec.name](*args, **sample.kwargs)
        if isinstance(out, tuple):
            out = out[0]
        size = int(np.prod(out.shape))
        if size == 0:
            return None
        if mode == "write":
            base_a, base = built[0]
            base_np = np.array(base_a.value, copy=True)
            view_np = rec.ref(base_np, *ref_args(sample.args[1:]))
            if not np.shares_memory(view_np, base_np):
                return None
            new = _fresh(tuple(out.shape), dtname(out))
            K["assign"](out, K["from_numpy"](new))
            view_np[...] = new
            err = compare_arrays(host(K, base), base_np, (0, 0), "exact")
            return f"after writing through the result, the input: {err}" if err else None
        if mode == "read":
            base_a, base = built[0]
            new = _fresh(tuple(base.shape), dtname(base), 1)
            K["assign"](base, K["from_numpy"](new))
            want = rec.ref(new, *ref_args(sample.args[1:]))
            err = compare_arrays(host(K, out), np.asarray(want), (0, 0), "exact")
            return f"after writing to the input, the result: {err}" if err else None
        before = [(a, host(K, b)) for a, b in built]
        K["assign"](out, K["from_numpy"](_fresh(tuple(out.shape), dtname(out), 2)))
        for (a, b_np), (_, b) in zip(before, built):
            err = compare_arrays(host(K, b), b_np, (0, 0), "exact")
            if err:
                return f"writing to the result changed an input (the result must be a new array): {err}"
        return None

    samples = [s for s in samples if not any(isinstance(x, A) and x.layout == "B"
                                             for x in (s.args[:1] if mode != "copy" else s.args))]
    if not samples:
        raise Skip("no sample")
    _run_all(K, rec, dtype, samples, runner)


def check_random(K, rec, dtype, backend_dtypes):
    rec.random(K, dtype)


def check_fallback_raises(K, rec):
    """A kernel whose decomposition cannot be written in primitives: through the decomposition it
    raises NotImplementedError (naming the kernel's purpose), never anything else."""
    try:
        rec.fallback_raises(K)
    except NotImplementedError as e:
        if not str(e):
            raise CheckFailure(f"{rec.name}: the decomposition raised NotImplementedError without a message")
        return
    except Exception as e:  # noqa: BLE001
        raise CheckFailure(f"{rec.name}: the decomposition raised {type(e).__name__} ({e}), "
                           "expected NotImplementedError") from None
    raise CheckFailure(f"{rec.name}: the decomposition did not raise NotImplementedError")


def check_errors(rec, device):
    """Frontend calls on tensors on the backend's device that must raise."""
    import tensorplug

    def T(data, dtype=None):
        return tensorplug.tensor(data, dtype=dtype, device=device)
    fails = []
    for case in rec.errors:
        try:
            with quiet():
                case.fn(T)
        except case.exc:
            continue
        except Exception as e:  # noqa: BLE001
            want = case.exc.__name__ if isinstance(case.exc, type) else " or ".join(x.__name__ for x in case.exc)
            fails.append(f"{case.desc}: raised {type(e).__name__} ({e}), expected {want}")
            continue
        fails.append(f"{case.desc}: did not raise")
    if fails:
        raise CheckFailure(f"{rec.name} error inputs on {device}: " + "; ".join(fails))
