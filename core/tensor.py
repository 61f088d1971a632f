"""The Tensor: metadata, autograd state, and methods that call ops.

Ops live in `tensorplug.ops.*` and attach themselves as methods. A tensor holds its
backend array (`_data`), dtype, the backend's kernel table (`_k`) and its device.
Rarely-set state (grad, version counter, view base, hooks) lives in class-level
defaults overridden per instance, so creating a tensor costs four stores.
"""
from __future__ import annotations

from . import dtypes as _dt
from .autograd import grad_mode
from .device import as_device

_gstate = grad_mode.state


class Size(tuple):
    """A tensor's shape: a tuple that prints as `tensorplug.Size([2, 3])`."""
    __slots__ = ()

    def __repr__(self):
        return f"tensorplug.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


_NONLEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                 "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                 "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                 "Tensor by mistake, make sure you access the leaf Tensor instead.")

# for PyTorch's messages about an assigned .grad: dtypes by C++ type name and by scalar-type name
_CNAME = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
          "int8": "signed char", "int16": "short int", "int32": "int", "int64": "long int", "uint8": "unsigned char",
          "bool": "bool", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
_SNAME = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "int8": "Char",
          "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_GRAD_DTYPE_HINT = ("The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
                    "tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype "
                    "with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems "
                    "that assume they match.")
_SAME = object()        # grad_dtype not set: the tensor's own dtype


def _grad_device_error(got, want):
    if got.type != want.type:
        return (f"attempting to assign a gradient with device type '{got.type}' to a tensor with device type "
                f"'{want.type}'. Please ensure that the gradient and the tensor are on the same device")
    return (f"attempting to assign a gradient located on device with index '{got.index}' to a tensor located on "
            f"device with index '{want.index}'. Please ensure that the gradient and the tensor are on the same device")


class Tensor:
    __slots__ = ("_data", "_dtype", "_k", "_dev", "__dict__", "__weakref__")
    __array_priority__ = 1000
    __array_ufunc__ = None            # NumPy defers `ndarray op tensor` to our reflected ops

    # defaults of rarely-set state (an instance stores its own value only when it differs)
    _rg = False                       # requires grad (leaf flag, or recorded by an op)
    grad_fn = None
    _grad = None                      # .grad (a property: warns on non-leaves, as PyTorch)
    _grad_dtype = _SAME               # the dtype .grad must have: _SAME (the tensor's), a dtype, or None (any)
    _out_nr = 0
    _ver = None                       # [version] shared by all views of one storage
    _base = None                      # the tensor this one is a view of
    _vsteps = None                    # (kernel, args) steps making a view's array from its base's
    _vgen = 0                         # a view: the base's _rebases its history was made against
    _rebases = 0                      # a base: in-place writes into it (or its views) recorded so far
    _acc = None                       # weakref to this leaf's AccumulateGrad node
    _hooks = None
    _post_acc_hooks = None            # [hook(tensor)] run after .grad was accumulated (leaves)
    _retains_grad = False
    is_sparse = False                 # tensorplug.sparse.SparseTensor overrides (and the methods below)

    def __new__(cls, *args, **kwargs):
        from .ops.creation import legacy_construct
        return legacy_construct(cls, _dt.get_default_dtype(), args, kwargs)

    @property
    def grad(self):
        """The gradient accumulated by backward (leaves, and non-leaves that retain_grad())."""
        g = self._grad
        if g is None and self.grad_fn is not None and not self._retains_grad:
            import warnings
            warnings.warn(_NONLEAF_GRAD, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value._dev is not self._dev:
                raise RuntimeError(_grad_device_error(value._dev, self._dev))
            gd = self._grad_dtype
            if value._dtype is not (self._dtype if gd is _SAME else gd) and gd is not None:
                raise RuntimeError(f"attempting to assign a gradient with dtype '{_CNAME[value._dtype.name]}' to a "
                                   f"tensor with grad_dtype '{_SNAME[(self._dtype if gd is _SAME else gd).name]}'. "
                                   + _GRAD_DTYPE_HINT)
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value._data.shape)}' to a tensor "
                                   f"of size '{list(self._data.shape)}'. Please ensure that the gradient and the "
                                   f"tensor are the same size")
        self._grad = value

    @property
    def grad_dtype(self):
        """The dtype `.grad` must have (default: the tensor's dtype; None: any). Leaves only."""
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        gd = self._grad_dtype
        return self._dtype if gd is _SAME else gd

    @grad_dtype.setter
    def grad_dtype(self, dt):
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if dt is not None and not isinstance(dt, _dt.dtype):
            raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(dt).__name__}")
        g = self._grad
        if g is not None and dt is not None and g._dtype is not dt:
            raise RuntimeError(f"Cannot set grad_dtype to '{_SNAME[dt.name]}' because there is already a gradient "
                               f"with dtype '{_SNAME[g._dtype.name]}'. Please clear the gradient (.grad = None) "
                               "before changing grad_dtype, or ensure the new grad_dtype matches the existing "
                               "gradient's dtype.")
        self._grad_dtype = dt

    def __getattr__(self, name):
        # only for names that ordinary lookup missed: the methods of the op families that load on
        # first use (tensorplug.ops.load_lazy), then the usual error
        if not name.startswith("_"):
            from .ops import load_lazy
            if load_lazy():
                return getattr(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    # -- metadata ----------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        s = self._data.shape
        if dim is None:
            return Size(s)
        return s[_wrap_dim(dim, len(s))]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._dev

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    def dim(self) -> int:
        return len(self._data.shape)

    ndimension = dim

    def numel(self) -> int:
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def is_cuda(self) -> bool:
        return self._dev.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._dev.type == "cpu"

    @property
    def is_xpu(self) -> bool:          # programs test it beside is_cuda (pytorch/examples dcgan)
        return self._dev.type == "xpu"

    @property
    def is_mps(self) -> bool:
        return self._dev.type == "mps"

    def to_sparse(self, *args, **kwargs):
        """This tensor as a sparse COO tensor (tensorplug.sparse)."""
        from .sparse._ops import to_sparse
        return to_sparse(self, *args, **kwargs)

    to_sparse_coo = to_sparse

    def to_dense(self, dtype=None, *, masked_grad=None):
        return self if dtype is None else self.to(dtype)

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    @property
    def backend(self):
        """The compute backend whose kernels serve this tensor."""
        return self._k["__backend__"]

    @property
    def output_nr(self) -> int:
        """Which output of its grad_fn this tensor is (0 for a leaf or a single-output op)."""
        return self._out_nr

    @property
    def _version(self) -> int:
        v = self._ver
        return v[0] if v is not None else 0

    def _bump_version(self):
        v = self._ver
        if v is None:
            self._ver = [1]
        else:
            v[0] += 1

    # -- autograd state ----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, flag):
        if self.grad_fn is not None:
            if not flag:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                                   "want to use a computed variable in a subgraph that doesn't require "
                                   "differentiation use var_no_grad = var.detach().")
            return
        if flag and self._dtype.category < 2:         # floating point and complex only
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients "
                               f"(got {self._dtype!r})")
        self._rg = bool(flag)

    def requires_grad_(self, requires_grad: bool = True):
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self):
        """Keep this non-leaf tensor's gradient in `.grad` after backward."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        import weakref
        ref = weakref.ref(self)

        def keep(g):
            t = ref()
            if t is not None:
                # a copy: the engine may hand the same gradient tensor to other consumers
                own = g.clone() if _gstate.enabled else g.detach()._clone_data()
                t.grad = own if t.grad is None else t.grad + own
        self.grad_fn.add_tensor_hook(self._out_nr, keep, retain=True)
        self._retains_grad = True

    def register_hook(self, hook):
        """Call hook(grad) when this tensor's gradient is computed; a returned tensor replaces it."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn.add_tensor_hook(self._out_nr, hook)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        from .autograd.graph import _RemovableHandle
        return _RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call hook(tensor) after backward has accumulated a gradient into this leaf's `.grad`
        (the hook reads or changes `tensor.grad` in place; its return value is ignored)."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        self._post_acc_hooks.append(hook)
        from .autograd.graph import _RemovableHandle
        return _RemovableHandle(self._post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if gradient is None and inputs is None:     # loss.backward(): straight to the engine
            run = _engine[0]
            if run is None:
                from .autograd.engine import run_backward as run
                _engine[0] = run
            run((self,), (None,), create_graph if retain_graph is None else retain_graph, create_graph)
            return
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self):
        """A tensor sharing this one's data, cut from the graph."""
        t = _make(self._data, self._dtype, self._k, self._dev)
        if self._ver is None:
            self._ver = [0]
        t._ver = self._ver
        return t

    def detach_(self):
        if self._base is not None and self._base._rg:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._rg = False
        return self

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(other).__name__}")
        self._data, self._dtype, self._k, self._dev = other._data, other._dtype, other._k, other._dev

    # -- conversion to Python / NumPy --------------------------------------------------------
    def numpy(self, *, force=False):
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._dev.type != "cpu" and not force:
            raise TypeError(f"can't convert {self._dev} device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        if self._dtype is _dt.bfloat16:      # NumPy itself has no bfloat16: PyTorch refuses, so do we
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._k["to_numpy"](self._data)

    def _host(self):
        import numpy as np
        return np.asarray(self._k["to_numpy"](self._data))

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._host().reshape(()).item()

    def tolist(self):
        return self._host().tolist()

    def __array__(self, dtype=None, copy=None):
        if self._dtype is _dt.bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16")
        a = self._host()
        return a.astype(dtype) if dtype is not None else a

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                               f"(this tensor has {self.numel()} elements)")
        return bool(self.item())

    def __float__(self):
        if self._dtype.category == 3:
            raise RuntimeError("value cannot be converted to type double without overflow")
        return float(self.item())

    def __int__(self):
        if self._dtype.category == 3:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self._dtype.category >= 2 or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self):
        s = self._data.shape
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    def __iter__(self):
        if not self._data.shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    __hash__ = object.__hash__

    def __repr__(self):
        from ._formatting import format_tensor
        return format_tensor(self)

    __str__ = __repr__

    def __format__(self, spec):
        # as PyTorch: a 0-d tensor formats as its value (also with an empty spec); others only as str()
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    def __reduce_ex__(self, protocol):
        import numpy as np
        return (_rebuild, (np.array(self._host()), self._dtype.name, str(self._dev), self._rg))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol")
        t = self.detach().clone()
        t = _retype(t, type(self))
        t._rg = self._rg
        if self.grad is not None:
            t.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t

    # -- shared memory (tensorplug.multiprocessing) ---------------------------------------------
    def share_memory_(self):
        """Move this tensor's memory into shared memory (a no-op when it is there, or on CUDA)."""
        from .multiprocessing._sharing import share_tensor_
        return share_tensor_(self)

    def is_shared(self) -> bool:
        """Whether this tensor's memory is shared memory (always True on CUDA, as PyTorch)."""
        from .multiprocessing._sharing import tensor_is_shared
        return tensor_is_shared(self)

    # -- helpers used by the engine -------------------------------------------------------------
    def _ones_like_nograd(self):
        k, dt = self._k, self._dtype
        if self._data.shape == ():
            # loss.backward()'s seed: a copy of a cached 0-d one (a backend's copy costs a fraction of its
            # full); not for a backend with several devices, whose creation kernels use the current one
            key = (id(k), dt)
            hit = _ONES.get(key)
            if hit is None:
                single = getattr(k.get("__backend__"), "indexed", True) is False
                # (the table is kept alive, so its id stays unique)
                hit = _ONES[key] = (k, k["full"]((), 1, dt.name) if single else None)
            if hit[1] is not None:
                return _make(k["copy"](hit[1]), dt, k, self._dev)
        return _make(k["full"](self._data.shape, 1, dt.name), dt, k, self._dev)

    def _new_like_data(self, value):
        from .ops.creation import tensor
        return tensor(value, dtype=self._dtype, device=self._dev)

    def _clone_data(self):
        return _make(self._k["copy"](self._data), self._dtype, self._k, self._dev)

    def _iadd_data(self, other):
        """self += other on raw data, no autograd (gradient accumulation)."""
        k = self._k
        k["add"](self._data, other._data, out=self._data)
        self._bump_version()


_new = object.__new__
_ONES: dict = {}         # (id(kernel table), dtype) -> (table, 0-d array of ones): see _ones_like_nograd
_engine = [None]        # autograd.engine.run_backward, bound on first use (autograd imports this module)


def _make(data, dtype, k, dev, cls=Tensor):
    t = _new(cls)
    t._data = data
    t._dtype = dtype
    t._k = k
    t._dev = dev
    return t


def _retype(t, cls):
    if cls is Tensor or type(t) is cls:
        return t
    n = _make(t._data, t._dtype, t._k, t._dev, cls)
    n.__dict__.update(t.__dict__)
    return n


def _rebuild(array, dtype_name, device_str, requires_grad):
    from .ops.creation import from_numpy
    t = from_numpy(array).to(device=as_device(device_str), dtype=_dt.BY_NAME[dtype_name])
    t._rg = requires_grad
    return t


def _wrap_dim(dim, ndim):
    if not isinstance(dim, int):
        try:
            dim = dim.__index__()
        except AttributeError:
            raise TypeError(f"dim must be an int, got {type(dim).__name__}") from None
    lo = -ndim if ndim else -1
    hi = ndim - 1 if ndim else 0
    if dim < lo or dim > hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else dim
