"""tensorplug.testing.assert_close: PyTorch's comparison of tensors, numbers and their containers.

Pairs are matched structurally (sequences item by item, mappings key by key); each leaf pair is two
tensors (or two NumPy arrays), two numbers, or two Nones. A tensor is close when every element
satisfies |actual - expected| <= atol + rtol * |expected| (NaN equal only with equal_nan). Default
tolerances come from the dtypes (the larger of the two pairs' defaults); integer and bool values
must be equal. Messages follow PyTorch's wording, including the index of the greatest absolute
and relative difference among the mismatched elements.
"""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

# dtype name -> (rtol, atol), PyTorch's defaults; any other dtype compares exactly
_DEFAULT_TOL = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                "float64": (1e-7, 1e-7), "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5),
                "complex128": (1e-7, 1e-7)}


class _Mismatch(Exception):
    def __init__(self, text, exc_type=AssertionError):
        super().__init__(text)
        self.text, self.exc_type = text, exc_type


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless `actual` and `expected` are close (see the module docstring).

    msg: a string replacing the message, or a callable given the generated message."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'atol' if atol is None else 'rtol'}.")
    if rtol is not None and (rtol < 0 or atol < 0):
        raise ValueError(f"rtol and atol must be non-negative, got rtol={rtol} and atol={atol}")
    opts = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype)
    try:
        _compare(actual, expected, [], opts)
    except _Mismatch as m:
        text = m.text
        if m.exc_type is AssertionError and msg is not None:
            text = msg(text) if callable(msg) else msg
        raise m.exc_type(text) from None


def _where(path):
    return "" if not path else "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)


def _is_tensor(x):
    from ..tensor import Tensor
    return isinstance(x, Tensor)


def _compare(a, e, path, opts):
    if _is_tensor(a) and _is_tensor(e) or isinstance(a, np.ndarray) and isinstance(e, np.ndarray):
        return _compare_tensors(a, e, path, opts)
    if a is None or e is None:
        if a is not e:
            raise _Mismatch(f"None mismatch: {a} is not {e}{_where(path)}")
        return
    if _is_number(a) and _is_number(e):
        return _compare_numbers(a, e, path, opts)
    if _is_sequence(a) and _is_sequence(e):
        if len(a) != len(e):
            raise _Mismatch(f"The length of the sequences mismatch: {len(a)} != {len(e)}{_where(path)}")
        for i, (x, y) in enumerate(zip(a, e)):
            _compare(x, y, path + [i], opts)
        return
    if isinstance(a, collections.abc.Mapping) and isinstance(e, collections.abc.Mapping):
        ka, ke = set(a), set(e)
        if ka != ke:
            missing, extra = sorted(ke - ka, key=repr), sorted(ka - ke, key=repr)
            raise _Mismatch("The keys of the mappings do not match:\n"
                            + (f"Missing keys in the actual mapping: {missing}\n" if missing else "")
                            + (f"Additional keys in the actual mapping: {extra}" if extra else "").rstrip("\n")
                            + _where(path))
        for k in e:
            _compare(a[k], e[k], path + [k], opts)
        return
    raise _Mismatch(f"No comparison pair was able to handle inputs of type {_type_name(a)} and "
                    f"{_type_name(e)}.{_where(path)}", TypeError)


def _type_name(x):
    return repr(type(x))


def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, np.ndarray)


def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes))


def _tolerances(names, opts):
    if opts["rtol"] is not None:
        return opts["rtol"], opts["atol"]
    pairs = [_DEFAULT_TOL.get(n, (0.0, 0.0)) for n in names]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _compare_numbers(a, e, path, opts):
    if opts["check_dtype"] and type(a) is not type(e):
        raise _Mismatch(f"The (d)types do not match: {type(a)} != {type(e)}.{_where(path)}")
    kinds = [("complex128" if isinstance(v, complex) else "float64" if isinstance(v, float) else "int64")
             for v in (a, e)]
    rtol, atol = _tolerances(kinds, opts)
    exact = rtol == 0 and atol == 0
    if isinstance(a, bool) or isinstance(e, bool) or not (isinstance(a, (float, complex)) or isinstance(e, (float, complex))):
        av, ev = int(a), int(e)
    else:
        av, ev = complex(a) if isinstance(a, complex) or isinstance(e, complex) else float(a), \
            complex(e) if isinstance(a, complex) or isinstance(e, complex) else float(e)
    if _close_scalar(av, ev, rtol, atol, opts["equal_nan"]):
        return
    raise _Mismatch(_scalar_message(a, e, abs(av - ev), rtol, atol, exact) + _where(path))


def _close_scalar(a, e, rtol, atol, equal_nan):
    if a == e:
        return True
    if isinstance(a, (float, complex)) or isinstance(e, (float, complex)):
        if equal_nan and np.isnan(a) and np.isnan(e):
            return True
        if not (np.isfinite(a) and np.isfinite(e)):
            return False
        return abs(a - e) <= atol + rtol * abs(e)
    return False


def _scalar_message(a, e, diff, rtol, atol, exact):
    rel = _safe_div(float(abs(diff)), float(abs(e)))
    head = "Scalars are not equal!" if exact else "Scalars are not close!"
    allow_a = "" if exact else f" (up to {atol} allowed)"
    allow_r = "" if exact else f" (up to {rtol} allowed)"
    return (f"{head}\n\nExpected {e} but got {a}.\nAbsolute difference: {diff}{allow_a}\n"
            f"Relative difference: {rel}{allow_r}")


def _safe_div(x, y):
    if y == 0:
        return float("nan") if x == 0 or x != x else float("inf")
    return x / y


def _meta(x):
    """(array, dtype name, shape, device string, shown dtype, shown shape) of a tensor or ndarray."""
    if isinstance(x, np.ndarray):
        return x, x.dtype.name, tuple(x.shape), "cpu", f"torch.{x.dtype.name}", f"torch.Size({list(x.shape)})"
    from .. import dtypes as _dt
    t = x.detach()
    name = t.dtype.name
    if name in ("bfloat16", "float16"):
        arr = t.to(_dt.float32).cpu().numpy()
    else:
        arr = t.cpu().numpy()
    return arr, name, tuple(t.shape), str(t.device), str(t.dtype), repr(t.shape)


def _compare_tensors(a, e, path, opts):
    arr_a, name_a, shape_a, dev_a, dt_a, sh_a = _meta(a)
    arr_e, name_e, shape_e, dev_e, dt_e, sh_e = _meta(e)
    if shape_a != shape_e:
        raise _Mismatch(f"The values for attribute 'shape' do not match: {sh_a} != {sh_e}.{_where(path)}")
    if opts["check_device"] and dev_a != dev_e:
        raise _Mismatch(f"The values for attribute 'device' do not match: {dev_a} != {dev_e}.{_where(path)}")
    if opts["check_dtype"] and name_a != name_e:
        raise _Mismatch(f"The values for attribute 'dtype' do not match: {dt_a} != {dt_e}.{_where(path)}")
    rtol, atol = _tolerances((name_a, name_e), opts)
    exact = rtol == 0 and atol == 0
    common = np.result_type(arr_a, arr_e)
    if arr_a.ndim == 0:
        av, ev = arr_a.astype(common).item(), arr_e.astype(common).item()
        if _close_scalar(av, ev, rtol, atol, opts["equal_nan"]):
            return
        raise _Mismatch(_scalar_message(av, ev, abs(av - ev), rtol, atol, exact) + _where(path))
    if common == np.bool_:
        common = np.dtype(np.int64)
    elif name_a == name_e == "float16":
        common = np.dtype(np.float16)       # differences in the tensors' own precision, as PyTorch reports them
    x, y = arr_a.astype(common, copy=False), arr_e.astype(common, copy=False)
    floating = common.kind in "fc"
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if floating:
            matches = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=opts["equal_nan"]) | (x == y)
        else:
            matches = x == y
        if matches.all():
            return
        abs_diff = np.abs(x - y)                  # real for complex values
        rel_type = abs_diff.dtype if floating else np.float32
        rel_diff = abs_diff.astype(rel_type) / np.abs(y).astype(rel_type)
        abs_diff = np.where(matches, 0, abs_diff).astype(abs_diff.dtype)
        rel_diff = np.where(matches, 0, rel_diff).astype(rel_type)
    total, bad = x.size, int((~matches).sum())
    i_abs = np.unravel_index(int(np.argmax(abs_diff)), abs_diff.shape)
    i_rel = np.unravel_index(int(np.argmax(rel_diff)), rel_diff.shape)
    head = "Tensor-likes are not equal!" if exact else "Tensor-likes are not close!"
    allow_a = "" if exact else f" (up to {atol} allowed)"
    allow_r = "" if exact else f" (up to {rtol} allowed)"
    text = (f"{head}\n\nMismatched elements: {bad} / {total} ({bad / total:.1%})\n"
            f"Greatest absolute difference: {abs_diff[i_abs].item()} at index {tuple(int(i) for i in i_abs)}{allow_a}\n"
            f"Greatest relative difference: {rel_diff[i_rel].item()} at index {tuple(int(i) for i in i_rel)}{allow_r}")
    raise _Mismatch(text + _where(path))
