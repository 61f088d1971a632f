"""tensorplug.fft: discrete Fourier transforms, as torch.fft.

fft / ifft / fft2 / ifft2 / fftn / ifftn (complex to complex), rfft / rfft2 / rfftn and ihfft
(real to one-sided complex), irfft / irfft2 / irfftn and hfft (one-sided complex to real), with
`n` / `s` (inputs cut or zero-padded to that length), `dim` and `norm` ("backward": no scaling
forward, 1/n inverse; "ortho": 1/sqrt(n) both ways; "forward": 1/n forward, none inverse), and
fftfreq / rfftfreq / fftshift / ifftshift.

The transforms run the backend's optional kernels fft_c2c / fft_r2c / fft_c2r
(core/dispatch/optional_fft.py; a DFT by matmul where a backend lacks them). Each kernel's
gradient is another of them, recorded as a Tensor op, so gradients of any order work: the vjp of
a complex transform is the opposite-direction transform with the same scale; a real-to-complex
one's is the inverse of the zero-padded gradient (its real part); a complex-to-real one's is a
real-to-complex transform with the entries that stand for two Hermitian partners doubled.

    >>> tensorplug.fft.fft(tensorplug.tensor([1., 0., 0., 0.]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
"""
from __future__ import annotations

from . import dtypes as _dt
from .ops._core import Tensor, _gstate, _make, record, wrap_dim

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
# the norm name giving the same scale to a transform in the other direction (what a vjp needs)
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# -- argument handling ---------------------------------------------------------------------------------
def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(f"Invalid normalization mode: \"{norm}\"")
    return norm


def _check_tensor(x, fname):
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{fname}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _type_name(dt):
    return {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(dt.name, dt._legacy[:-len("Tensor")])


def _as_complex(x):
    dt = x._dtype
    if dt.category == 3:
        return x
    if dt is _dt.float16 or dt.name == "bfloat16":
        raise RuntimeError(f"Unsupported dtype {_type_name(dt)}")
    return x.to(dt.to_complex() if dt.category == 2 else _dt.get_default_dtype().to_complex())


def _as_real(x, fname):
    dt = x._dtype
    if dt.category == 3:
        raise RuntimeError(f"{fname} expects a real input tensor, but got {_type_name(dt)}")
    if dt is _dt.float16 or dt.name == "bfloat16":
        raise RuntimeError(f"Unsupported dtype {_type_name(dt)}")
    return x if dt.category == 2 else x.to(_dt.get_default_dtype())


def _n_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _dim1(x, dim):
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(dim, x.ndim)


def _dims(x, s, dim, default):
    """(axes, sizes): the transformed dims and their lengths (None where s leaves it unchanged)."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        axes = [wrap_dim(d, x.ndim) for d in dims]
        if s is not None and len(s) != len(axes):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
        axes = list(range(x.ndim - len(s), x.ndim))
    elif default is not None:
        axes = [wrap_dim(d, x.ndim) for d in default]
    else:
        axes = list(range(x.ndim))
    if len(set(axes)) != len(axes):
        raise RuntimeError("FFT dims must be unique")
    sizes = [None] * len(axes) if s is None else [None if n == -1 else _n_points(n) for n in s]
    return tuple(axes), sizes


def _zeros(like, shape):
    return _make(like._k["full"](tuple(shape), 0, like._dtype.name), like._dtype, like._k, like._dev)


def _resize(x, axis, n):
    """x cut or zero-padded to n entries along axis (differentiably)."""
    cur = x._data.shape[axis]
    if n == cur:
        return x
    if n < cur:
        return x.narrow(axis, 0, n)
    from .ops.shape import cat
    shape = list(x._data.shape)
    shape[axis] = n - cur
    return cat([x, _zeros(x, shape)], axis)


def _resized(x, axes, sizes):
    for a, n in zip(axes, sizes):
        if n is not None:
            x = _resize(x, a, n)
    for a in axes:
        _n_points(x._data.shape[a])
    return x


# -- the three transforms, each recording its vjp ---------------------------------------------------------
def _c2c(x, axes, norm, forward):
    k = x._k
    r = _make(k["fft_c2c"](x._data, axes, norm, forward), x._dtype, k, x._dev)
    if x._rg and _gstate.enabled:
        record("FftC2CBackward0", r, (x,), lambda g: (_c2c(g, axes, _SWAP[norm], not forward),))
    return r


def _r2c(x, axes, norm, forward):
    k = x._k
    r = _make(k["fft_r2c"](x._data, axes, norm, forward), x._dtype.to_complex(), k, x._dev)
    if x._rg and _gstate.enabled:
        n = x._data.shape[axes[-1]]

        def vjp(g):
            # the dropped half of the spectrum gets no gradient: zero-pad, transform back, real part
            return (_c2c(_resize(g, axes[-1], n), axes, _SWAP[norm], not forward).real,)
        record("FftR2CBackward0", r, (x,), vjp)
    return r


def _c2r(x, axes, n_last, norm, forward):
    k = x._k
    r = _make(k["fft_c2r"](x._data, axes, n_last, norm, forward), x._dtype.to_real(), k, x._dev)
    if x._rg and _gstate.enabled:
        def vjp(g):
            # entries 1 .. (n-1)//2 stand for themselves and their conjugate partners: doubled
            m = n_last // 2 + 1
            w = [1.0] * m
            for i in range(1, (n_last + 1) // 2):
                w[i] = 2.0
            shape = [1] * g.ndim
            shape[axes[-1]] = m
            from .ops.creation import tensor
            wt = tensor(w, dtype=g._dtype, device=g._dev).reshape(shape)
            return (_r2c(g, axes, _SWAP[norm], not forward) * wt,)
        record("FftC2RBackward0", r, (x,), vjp)
    return r


# -- one-dimensional transforms ----------------------------------------------------------------------------
def _c2c_1d(input, n, dim, norm, forward, fname):
    _check_tensor(input, fname)
    x = _as_complex(input)
    d = _dim1(x, dim)
    x = _resized(x, (d,), (None if n is None else _n_points(n),))
    return _c2c(x, (d,), _norm(norm), forward)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform along `dim` (cut or zero-padded to n points)."""
    return _out(_c2c_1d(input, n, dim, norm, True, "fft"), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of fft."""
    return _out(_c2c_1d(input, n, dim, norm, False, "ifft"), out)


def _r2c_1d(input, n, dim, norm, forward, fname):
    _check_tensor(input, fname)
    x = _as_real(input, fname)
    d = _dim1(x, dim)
    x = _resized(x, (d,), (None if n is None else _n_points(n),))
    return _r2c(x, (d,), _norm(norm), forward)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a real signal: the n // 2 + 1 non-negative frequencies."""
    return _out(_r2c_1d(input, n, dim, norm, True, "rfft"), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the one-sided inverse FFT of a real signal."""
    return _out(_r2c_1d(input, n, dim, norm, False, "ihfft"), out)


def _c2r_1d(input, n, dim, norm, forward, fname):
    _check_tensor(input, fname)
    x = _as_complex(input)
    d = _dim1(x, dim)
    n_last = _n_points(2 * (x._data.shape[d] - 1) if n is None else n)
    x = _resize(x, d, n_last // 2 + 1)
    return _c2r(x, (d,), n_last, _norm(norm), forward)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of n points (default 2 * (input.size(dim) - 1))."""
    return _out(_c2r_1d(input, n, dim, norm, False, "irfft"), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: a real result of n points."""
    return _out(_c2r_1d(input, n, dim, norm, True, "hfft"), out)


# -- n-dimensional transforms --------------------------------------------------------------------------------
def _c2c_nd(input, s, dim, norm, forward, fname, default=None):
    _check_tensor(input, fname)
    x = _as_complex(input)
    axes, sizes = _dims(x, s, dim, default)
    x = _resized(x, axes, sizes)
    if not axes:
        return x.clone()
    return _c2c(x, axes, _norm(norm), forward)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-D discrete Fourier transform over `dim` (default: all dims, or the last len(s))."""
    return _out(_c2c_nd(input, s, dim, norm, True, "fftn"), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of fftn."""
    return _out(_c2c_nd(input, s, dim, norm, False, "ifftn"), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D discrete Fourier transform (fftn over the last two dims)."""
    return _out(_c2c_nd(input, s, dim, norm, True, "fft2"), out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of fft2."""
    return _out(_c2c_nd(input, s, dim, norm, False, "ifft2"), out)


def _rfftn(input, s, dim, norm, fname):
    _check_tensor(input, fname)
    x = _as_real(input, fname)
    axes, sizes = _dims(x, s, dim, None)
    if not axes:
        raise RuntimeError(f"{fname} must transform at least one axis")
    x = _resized(x, axes, sizes)
    return _r2c(x, axes, _norm(norm), True)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-D FFT of a real signal, one-sided along the last transformed dim."""
    return _out(_rfftn(input, s, dim, norm, "rfftn"), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D FFT of a real signal (rfftn over the last two dims)."""
    return _out(_rfftn(input, s, dim, norm, "rfft2"), out)


def _irfftn(input, s, dim, norm, fname):
    _check_tensor(input, fname)
    x = _as_complex(input)
    axes, sizes = _dims(x, s, dim, None)
    if not axes:
        raise RuntimeError(f"{fname} must transform at least one axis")
    last = axes[-1]
    n_last = _n_points(2 * (x._data.shape[last] - 1) if sizes[-1] is None else sizes[-1])
    x = _resized(x, axes[:-1], sizes[:-1])
    x = _resize(x, last, n_last // 2 + 1)
    return _c2r(x, axes, n_last, _norm(norm), False)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn: a real result (last transformed dim: s[-1], default 2 * (size - 1))."""
    return _out(_irfftn(input, s, dim, norm, "irfftn"), out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of rfft2."""
    return _out(_irfftn(input, s, dim, norm, "irfft2"), out)


# -- helpers --------------------------------------------------------------------------------------------------
def _freqs(values, n, d, dtype, device, requires_grad):
    from .ops.creation import tensor
    dt = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    scale = 1.0 / (n * d)
    return tensor([v * scale for v in values], dtype=dt, device=device, requires_grad=requires_grad)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point FFT with sample spacing d: [0, 1, ..., -2, -1] / (d * n)."""
    values = list(range((n - 1) // 2 + 1)) + list(range(-(n // 2), 0))
    return _out(_freqs(values, n, d, dtype, device, requires_grad), out)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The non-negative sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (d * n)."""
    return _out(_freqs(list(range(n // 2 + 1)), n, d, dtype, device, requires_grad), out)


def _shift(input, dim, sign):
    from .ops.shape import roll
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    if not dims:
        return input.clone()
    axes = [wrap_dim(d, input.ndim) for d in dims]
    shifts = [sign * (input._data.shape[a] // 2) for a in axes]
    return roll(input, shifts, axes)


def fftshift(input, dim=None):
    """Move the zero frequency to the middle: a roll by n // 2 along each dim (default: all)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of fftshift: a roll by -(n // 2)."""
    return _shift(input, dim, -1)


def _out(r, out):
    if out is None:
        return r
    from .ops.pointwise import _out as write
    return write(r, out)
