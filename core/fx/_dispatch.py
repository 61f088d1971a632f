"""Calls of tensorplug's functions with Proxy arguments record call_function nodes.

PyTorch routes `torch.relu(proxy)` through `__torch_function__`; tensorplug's ops are plain Python
functions, so importing tensorplug.fx (install()) replaces each public function of `tensorplug`,
`tensorplug.nn.functional`, `.special`, `.linalg` and `.fft` by a `Recorder`, in those namespaces
and where nn / vision layers hold it (refresh(): nn.ReLU calls `F.relu` with F the op module
`tensorplug.ops.activation`). A Recorder calls its function unless a Proxy is among the arguments
(top level or one list / tuple deep, as in `torch.cat([a, b])`); then it records itself as the
target of a call_function node. It compares equal to the function it stands for (through
`__wrapped__` chains) and hashes like the public function, so targets match whether the user took
the function before or after the import; it prints as `torch.<public path>`. It calls through
`_originals` (see there). Cost, only in programs that import fx: a Python call and an argument
scan per call of a public function.
"""
from __future__ import annotations

import inspect
import itertools
import types

from . import _originals

_installed = False
_SLOTS = vars(_originals)
_slot_ids = itertools.count()
_NAMES: dict = {}          # id(function) -> its `torch.` qualified name (originals and Recorders)
_KEEP: list = []           # the functions named in _NAMES, kept alive so their ids stay valid
NAMESPACES = ("", "nn.functional", "special", "linalg", "fft")
# public functions that are never ops on a value (their Proxy arguments are configuration at most)
_SKIP = frozenset(("is_tensor", "is_storage", "is_grad_enabled", "set_grad_enabled", "manual_seed", "seed",
                   "initial_seed", "get_rng_state", "set_rng_state", "get_default_dtype", "set_default_dtype",
                   "set_printoptions", "compile", "load", "save"))
# nn.functional ops PyTorch records as (input, other parameters by keyword, defaults filled in)
_KEYWORD_NORMALIZED = frozenset((
    "relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh", "hardswish", "hardsigmoid",
    "softmax", "log_softmax", "softmin", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout", "glu", "normalize", "rrelu", "gumbel_softmax", "softsign", "tanhshrink"))


_Proxy = None              # proxy.Proxy, bound by install() (an import per call would cost a microsecond)
_SEQ = (list, tuple)


def _proxy_in(args, kwargs):
    """The first Proxy among args / kwargs (top level, or one list / tuple deep), else None."""
    P = _Proxy
    for a in args:
        if isinstance(a, P):
            return a
        if type(a) in _SEQ:
            for e in a:
                if isinstance(e, P):
                    return e
    if kwargs:
        return _proxy_in(tuple(kwargs.values()), None)
    return None


def _root(fn):
    """The innermost function of a `__wrapped__` chain (what equal Recorders share)."""
    try:
        return inspect.unwrap(fn)
    except ValueError:                      # a __wrapped__ cycle
        return fn


class Recorder:
    """A public tensorplug function that records a call_function node when given a Proxy."""
    __fx_recorder__ = True          # tensorplug.save names it as the function it stands for

    def __init__(self, fn, qualname, public=None):
        self._slot = f"f{next(_slot_ids)}"
        setattr(_originals, self._slot, fn)
        self._key = _root(fn)
        self._hash = hash(fn if public is None else public)   # as the public function hashes
        self._fx_qualname = qualname
        self.__name__ = qualname.rpartition(".")[2]      # the public name (torch.arctan is atan)
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", None)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        self._normalize = qualname.startswith("torch.nn.functional.") and self.__name__ in _KEYWORD_NORMALIZED

    @property
    def fn(self):
        """The function this Recorder stands for (as the `_originals` module holds it now)."""
        return _SLOTS[self._slot]

    def __call__(self, *args, **kwargs):
        p = _proxy_in(args, kwargs)
        if p is None:
            return _SLOTS[self._slot](*args, **kwargs)
        if self._normalize and args:
            args, kwargs = self._keywords(args, kwargs)
        return p.tracer.create_proxy("call_function", self, args, kwargs)

    def _keywords(self, args, kwargs):
        import inspect
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return args, kwargs
        bound.apply_defaults()
        items = [(k, v) for k, v in bound.arguments.items()
                 if bound.signature.parameters[k].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                               inspect.Parameter.VAR_KEYWORD)]
        return (items[0][1],), dict(items[1:])

    def __eq__(self, other):
        return other is self or _root(other) is self._key

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return repr(self.fn)

    def __reduce__(self):
        return (_lookup, (self._fx_qualname,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _lookup(qualname):
    import importlib
    mod, _, name = qualname.partition(".")[2].rpartition(".")
    return getattr(importlib.import_module("tensorplug" + ("." + mod if mod else "")), name)


def qualname(fn):
    """The `torch.` name of a (replaced or original) public tensorplug function, or None."""
    q = _NAMES.get(id(fn))
    if q is None and callable(fn):
        q = _NAMES.get(id(_root(fn)))
    return q


def _is_fn(obj):
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) and \
        getattr(obj, "__module__", "") not in ("builtins", "math", "typing")


_undo: list = []           # (owner, attribute, previous value) of every replacement, for uninstall()


def _set(owner, attr, new):
    _undo.append((owner, attr, owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)))
    setattr(owner, attr, new)


def uninstall() -> None:
    """Put the original functions back (the next Proxy or trace installs the Recorders again)."""
    global _installed
    while _undo:
        owner, attr, old = _undo.pop()
        setattr(owner, attr, old)
    for table in (_recorders, _by_name, _publics, _views, _scanned):
        table.clear()
    _installed = False


_recorders: dict = {}       # id(function) -> its Recorder (the one layers get)
_by_name: dict = {}         # (id(function), public name) -> its Recorder
_publics: dict = {}         # id(function) -> (function, qualified name, public function)
_views: dict = {}           # id(op-family module) -> its _RecordingView
_scanned: set = set()       # the nn / vision modules already rerouted


def _recorder(obj):
    """The Recorder for obj: a public function, or a wrapper of one (`in_float32(linear)`); or None."""
    r = _recorders.get(id(obj))
    if r is None:
        hit = _publics.get(id(obj)) or _publics.get(id(_root(obj)))
        if hit is None:
            return None
        r = _recorders[id(obj)] = Recorder(obj, hit[1], hit[2])
        _NAMES[id(r)] = hit[1]
        _KEEP.extend((obj, r))
    return r


def _view(opmod):
    v = _views.get(id(opmod))
    if v is None:
        v = _views[id(opmod)] = _RecordingView(opmod)
    return v


def install() -> None:
    """Put the Recorders in place (once per process; see the module docstring)."""
    global _installed, _Proxy
    if _installed:
        return
    _installed = True
    from .proxy import Proxy
    _Proxy = Proxy
    import importlib
    import tensorplug
    tensorplug.ops.load_lazy()
    for ns in NAMESPACES:
        mod = importlib.import_module("tensorplug" + ("." + ns if ns else ""))
        prefix = "torch." + (ns + "." if ns else "")
        items = dict(vars(mod))
        if not ns:      # the op families loaded on first use publish through ops._api, not yet here
            items = {**{k: v for k, v in vars(tensorplug.ops._api).items() if k not in items}, **items}
        for attr, obj in items.items():
            if attr.startswith("_") or attr in _SKIP or not _is_fn(obj):
                continue
            q = prefix + attr
            inner = _root(obj)
            _publics.setdefault(id(obj), (obj, q, obj))
            _publics.setdefault(id(inner), (inner, q, obj))
            r = _by_name.get((id(obj), attr))
            if r is None:                   # one per function and name: it prints as that name, and
                r = _by_name[id(obj), attr] = Recorder(obj, q)   # torch.pdist stays F.pdist
            _NAMES.setdefault(id(obj), q)
            _NAMES.setdefault(id(inner), q)
            _NAMES[id(r)] = q
            _KEEP.extend((obj, inner, r))
            _recorders.setdefault(id(obj), r)
            _set(mod, attr, r)
    refresh()


def refresh() -> None:
    """Reroute the layers of nn / vision modules imported since (tracing calls this): their globals
    holding public functions (`from ..ops.shape import flatten`), their op-family module globals
    (nn.ReLU's `F` is tensorplug.ops.activation: replaced by a view of Recorders) and functions their
    classes keep. The op modules themselves are left alone, so one op calling another stays a plain
    call."""
    if not _installed:
        return
    import sys
    from ..tensor import Tensor
    for name, mod in list(sys.modules.items()):
        if mod is None or name in _scanned or not (name.startswith("tensorplug.nn.")
                                                   or name.startswith("tensorplug.vision")):
            continue
        _scanned.add(name)
        if name[len("tensorplug."):] in NAMESPACES:
            continue
        for attr, obj in list(vars(mod).items()):
            if _is_fn(obj):
                r = _recorder(obj)
                if r is not None:
                    _set(mod, attr, r)
            elif isinstance(obj, types.ModuleType) and obj.__name__.startswith("tensorplug.ops."):
                _set(mod, attr, _view(obj))
            elif isinstance(obj, type) and obj.__module__ == name and obj is not Tensor:
                for cattr, cobj in list(obj.__dict__.items()):
                    fn = cobj.__func__ if isinstance(cobj, staticmethod) else cobj
                    r = _recorder(fn) if _is_fn(fn) else None
                    if r is not None:
                        _set(obj, cattr, staticmethod(r) if isinstance(cobj, staticmethod) else r)


class _RecordingView(types.ModuleType):
    """An op-family module as the layers see it: its public functions as Recorders, the rest as is."""

    def __init__(self, mod):
        super().__init__(mod.__name__, mod.__doc__)
        self.__dict__["_fx_module"] = mod
        for attr, obj in vars(mod).items():
            r = _recorder(obj) if _is_fn(obj) and not attr.startswith("__") else None
            if r is not None:
                self.__dict__[attr] = r

    def __getattr__(self, name):
        return getattr(self.__dict__["_fx_module"], name)
