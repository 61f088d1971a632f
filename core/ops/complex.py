"""Complex numbers: real / imag (views), conj, angle, sgn, view_as_real / view_as_complex (views),
complex(real, imag), polar(abs, angle), and the error PyTorch gives for ops complex values lack.

Gradients follow PyTorch's convention: for a real loss L the gradient of z is dL/dRe(z) + i dL/dIm(z)
(the conjugate Wirtinger derivative times 2), so a holomorphic op's vjp is `g * conj(f'(z))`.

Differences from PyTorch, by design:
- conj() is eager: it returns a new tensor of conjugated values (PyTorch sets a lazy "conj bit"
  on a view), so is_conj() is always False and resolve_conj() returns its input;
- real / imag / view_as_real / view_as_complex are views (writes reach the base) but in-place
  writes through them are not tracked by autograd (they raise the view-replay error when the base
  requires grad); without native backend kernels they are copies (see optional_complex.py).

    >>> z = tensorplug.tensor([1 + 2j])
    >>> z.real[0] = 7.0; z
    tensor([7.+2.j])
"""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ._core import Tensor, _gstate, _make, broadcast_shapes, check_same_device, grad_for, record
from .shape import _strides, make_view

_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def not_for_complex(name, dt):
    """PyTorch's error for a kernel that has no complex version: '"lt_cpu" not implemented for
    'ComplexFloat''."""
    return NotImplementedError(f"\"{name}\" not implemented for '{_NAMES[dt.name]}'")


def cj(t):
    """conj(t), free for real tensors (backward rules call it on every input)."""
    return conj(t) if t._dtype.category == 3 else t


def _view(input, data, dtype):
    # step None: autograd cannot replay a dtype-changing view for an in-place write through it
    v = make_view(input, data, None)
    v._dtype = dtype
    return v


# -- parts -------------------------------------------------------------------------------------
def real(input):
    """The real parts as a view (a real tensor is returned as it is)."""
    if input._dtype.category != 3:
        return input
    r = _view(input, input._k["real"](input._data), input._dtype.to_real())
    if input._rg and _gstate.enabled:
        cdt = input._dtype
        record("RealBackward0", r, (input,), lambda g: (g.to(cdt),))
    return r


def imag(input):
    """The imaginary parts as a view (complex tensors only)."""
    if input._dtype.category != 3:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    r = _view(input, input._k["imag"](input._data), input._dtype.to_real())
    if input._rg and _gstate.enabled:
        record("ImagBackward0", r, (input,), lambda g: (g * 1j,))
    return r


def _set_part(getter):
    def setter(self, value):
        getter(self).copy_(value if isinstance(value, Tensor) else _full(getter(self), value))
    return setter


def _full(like, value):
    return _make(like._k["full"](like._data.shape, value, like._dtype.name), like._dtype, like._k, like._dev)


# -- conjugation -------------------------------------------------------------------------------
def _conjugate(input, node):
    if input._dtype.category != 3:
        return input
    r = _make(input._k["conj"](input._data), input._dtype, input._k, input._dev)
    if input._rg and _gstate.enabled:
        record(node, r, (input,), lambda g: (_conjugate(g, node),))
    return r


def conj(input):
    """The complex conjugate (eager: a new tensor); a real tensor is returned as it is."""
    return _conjugate(input, "ConjBackward0")


def conj_physical(input):
    """The conjugate, materialized (what conj() does here too)."""
    return _conjugate(input, "ConjPhysicalBackward0")


def resolve_conj(input):
    """input itself: conj() is never lazy here, so nothing is left to resolve."""
    return input


def is_conj(input) -> bool:
    """False: conj() materializes its result (PyTorch's lazy conjugate bit does not exist here)."""
    return False


def resolve_neg(input):
    return input


def is_neg(input) -> bool:
    return False


# -- magnitude and phase -----------------------------------------------------------------------
def angle(input):
    """The argument (phase) in radians: atan2(imag, real); for real inputs 0, or pi where negative."""
    k = input._k
    dt = input._dtype
    if dt.category == 3:
        d = input._data
        r = _make(k["atan2"](k["imag"](d), k["real"](d)), dt.to_real(), k, input._dev)
    else:
        from .pointwise import isnan, where
        x = input if dt.category == 2 else input.to(_dt.get_default_dtype())
        r = where(x < 0, math.pi, where(isnan(x), x, 0.0)).to(x._dtype).detach()
    if input._rg and _gstate.enabled:
        z = input

        def vjp(g):
            if z._dtype.category != 3:
                return (g * 0.0,)
            # d angle = Im(dz / z): the gradient is g * i z / |z|^2, 0 at z == 0
            from .pointwise import where
            a2 = real(z * conj(z))
            zero = a2 == 0
            return (where(zero, 0.0, g * 1j * z / where(zero, 1.0, a2)),)
        record("AngleBackward0", r, (input,), vjp, saved=(input,))
    return r


def sgn(input):
    """z / |z| (0 where z == 0) for complex tensors; sign() for real ones."""
    from .pointwise import sign, where
    if input._dtype.category != 3:
        return sign(input)
    k = input._k
    d = input._data
    a = k["abs"](d)
    zero = k["eq"](a, 0)
    safe = k["where"](zero, k["full"]((), 1, a.dtype.name if hasattr(a.dtype, "name") else str(a.dtype)), a)
    data = k["where"](zero, k["full"]((), 0, input._dtype.name), k["div"](d, k["astype"](safe, input._dtype.name)))
    r = _make(data, input._dtype, k, input._dev)
    if input._rg and _gstate.enabled:
        z, s = input, r

        def vjp(g):
            # s = z (z z*)^(-1/2): ds/dz = 1 / (2|z|), ds/dz* = -s^2 / (2|z|)
            from .pointwise import abs as abs_
            m = abs_(z)
            zero_ = m == 0
            return (where(zero_, 0.0, (g - conj(g) * s * s) / (2 * where(zero_, 1.0, m))),)
        record("SgnBackward0", r, (input,), vjp, saved=(input, r))
    return r


# -- real <-> complex reinterpretation ---------------------------------------------------------
def view_as_real(input):
    """A real view of shape (*input.shape, 2) holding (real, imag) pairs."""
    if input._dtype.category != 3:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    r = _view(input, input._k["view_as_real"](input._data), input._dtype.to_real())
    if input._rg and _gstate.enabled:
        record("ViewAsRealBackward0", r, (input,), lambda g: (complex(g.select(-1, 0), g.select(-1, 1)),))
    return r


def view_as_complex(input):
    """A complex view of a float32/float64 tensor whose last dimension holds (real, imag) pairs."""
    dt = input._dtype
    if dt not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor "
                           f"of scalar type: {dt._legacy[:-len('Tensor')]}")
    shape = input._data.shape
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    st = _strides(input._data, dt.itemsize)
    if st is not None:
        if st[-1] != 1:
            raise RuntimeError("Tensor must have a last dimension with stride 1")
        if any(s % 2 for s, n in zip(st[:-1], shape[:-1]) if n != 1):
            raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    r = _view(input, input._k["view_as_complex"](input._data), dt.to_complex())
    if input._rg and _gstate.enabled:
        record("ViewAsComplexBackward0", r, (input,), lambda g: (view_as_real(g),))
    return r


def complex(real, imag, *, out=None):
    """real + 1j * imag elementwise (broadcast); both float32 or both float64."""
    for i, t in enumerate((real, imag)):
        if not isinstance(t, Tensor):
            raise TypeError(f"complex(): argument '{('real', 'imag')[i]}' (position {i + 1}) must be Tensor, "
                            f"not {type(t).__name__}")
    a, b = real._dtype, imag._dtype
    if a.category != 2 or b.category != 2 or _dt.bfloat16 in (a, b):     # (no complex of bfloat16 parts)
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a._legacy[:-len('Tensor')]} and {b._legacy[:-len('Tensor')]}")
    if a is not b:
        raise RuntimeError(f"Expected object of scalar type {a._legacy[:-len('Tensor')]} but got scalar type "
                           f"{b._legacy[:-len('Tensor')]} for second argument")
    if a is _dt.float16:
        raise RuntimeError("complex(): float16 parts would make complex32 (ComplexHalf), which tensorplug does "
                           "not provide; convert the parts to float32 first")
    check_same_device(real, imag)
    k = real._k
    rd, id_ = real._data, imag._data
    if rd.shape != id_.shape:
        shape = broadcast_shapes(rd.shape, id_.shape)
        rd, id_ = k["broadcast_to"](rd, shape), k["broadcast_to"](id_, shape)
    r = _make(k["complex"](rd, id_), a.to_complex(), k, real._dev)
    if _gstate.enabled and (real._rg or imag._rg):
        x, y = real, imag
        record("ComplexBackward0", r, (x, y),
               lambda g: (grad_for(g.real, x) if x._rg else None, grad_for(g.imag, y) if y._rg else None))
    if out is not None:
        from .pointwise import _out
        return _out(r, out)
    return r


def polar(abs, angle, *, out=None):
    """abs * (cos(angle) + 1j * sin(angle))."""
    r = complex(abs * angle.cos(), abs * angle.sin())
    if out is not None:
        from .pointwise import _out
        return _out(r, out)
    return r


def _attach():
    T = Tensor
    T.real = property(real, _set_part(real))
    T.imag = property(imag, _set_part(imag))
    T.conj, T.conj_physical, T.resolve_conj, T.is_conj = conj, conj_physical, resolve_conj, is_conj
    T.resolve_neg, T.is_neg = resolve_neg, is_neg
    T.angle = angle             # (sgn is public through the special family, which calls sgn here)
    T.conj_physical_ = _conj_physical_


def _conj_physical_(self):
    from ._core import check_inplace, commit_inplace, snapshot
    if self._dtype.category != 3:
        return self
    check_inplace(self)
    src = snapshot(self) if (self._rg and _gstate.enabled) else self
    return commit_inplace(self, conj_physical(src))


_attach()

PUBLIC = ["real", "imag", "conj", "conj_physical", "resolve_conj", "is_conj", "resolve_neg", "is_neg", "angle",
          "view_as_real", "view_as_complex", "complex", "polar"]
