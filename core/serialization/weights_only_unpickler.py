"""The restricted unpickler of `load(weights_only=True)` (the default): data in, never code.

It interprets the pickle itself (protocols 0-5, data opcodes only) and resolves a GLOBAL only from an
allowlist: what PyTorch's weights-only unpickler admits (tensors and their rebuild functions,
storages, Parameter, OrderedDict, Counter, set, complex, bytearray, dtypes, Size, device), plus NumPy
arrays and scalars of numeric dtypes, plus what the user allows with `add_safe_globals` /
`safe_globals`. Any other global is refused with PyTorch's pickle.UnpicklingError before anything is
called; REDUCE / NEWOBJ call only allowlisted callables and BUILD sets state only on the types PyTorch
allows (and on allowlisted user types). The modules os, posix, nt and sys are refused even when
allowlisted, as PyTorch does.

Malformed input (truncated data, stack or memo misuse, unknown opcodes) is a CheckpointError.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import pickle
import struct
from collections import Counter, OrderedDict

import numpy as np

from .errors import CheckpointError, corrupted, describe

__all__ = ["Unpickler", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
           "weights_only_message", "allowed_globals", "check_nesting"]

_BLOCKED = ("sys", "os", "posix", "nt")
_user_globals = []                  # what add_safe_globals received, in order

_HEAD = ("Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo "
         "those steps only if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed "
         "the default value of the `weights_only` argument in `torch.load` from `False` to `True`. Re-running "
         "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
         "execution. Do it only if you got the file from a trusted source.\n\t(2) Alternatively, to load with "
         "`weights_only=True` please check the recommended steps in the following error message.\n\t"
         "WeightsUnpickler error: ")
_HEAD_PLAIN = ("Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` "
               "argument in `torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set "
               "to `False` will likely succeed, but it can result in arbitrary code execution. Do it only if you "
               "got the file from a trusted source.\n")
_TAIL = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
         "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def weights_only_message(detail, kind="global"):
    """PyTorch's message for a weights-only refusal: of a global ("global"), of a blocked module
    ("blocked"), or of anything else the unpickler does not do ("other")."""
    if kind == "global":
        return _HEAD + detail + _TAIL
    if kind == "blocked":
        return _HEAD_PLAIN + "\n\n" + detail + _TAIL
    return (_HEAD_PLAIN + "Please file an issue with the following so that we can make `weights_only=True` "
            "compatible with your use case: WeightsUnpickler error: " + detail + _TAIL)


def _refuse(detail, kind="global"):
    return pickle.UnpicklingError(weights_only_message(detail, kind))


# -- the allowlist -----------------------------------------------------------------------------------------
class _Entry:
    __slots__ = ("obj", "call", "user")

    def __init__(self, obj, call, user=False):
        self.obj, self.call, self.user = obj, call, user


def _bytearray(*args):
    """bytearray from data only (bytearray(n) would allocate n bytes a file chose)."""
    if not args or not isinstance(args[0], (bytes, str)):
        raise _refuse("bytearray() in a weights-only file must be built from bytes or a string", "other")
    return bytearray(*args)


def _empty_bytes(*args):
    # pickle protocols < 3 write b"" as bytes() (e.g. the data of an empty NumPy array)
    if args:
        raise _refuse("bytes() in a weights-only file takes no arguments", "other")
    return b""


def _codecs_encode(obj, encoding="utf-8", errors="strict"):
    # what pickle protocol 2 writes for bytes: _codecs.encode('...', 'latin1')
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise _refuse("_codecs.encode in a weights-only file encodes a string as text only", "other")
    return codecs.encode(obj, encoding, errors)


_NUMERIC_KINDS = "biufc"


def _np_dtype(spec, align=False, copy=False):
    """numpy.dtype for numeric (and bool) dtypes only: no object, structured or void dtypes."""
    if not isinstance(spec, str):
        raise _refuse(f"a NumPy dtype in a weights-only file must be named by a string, got {spec!r}", "other")
    d = np.dtype(spec)
    if d.kind not in _NUMERIC_KINDS or d.fields is not None or d.subdtype is not None:
        raise _refuse(f"NumPy arrays of dtype {d} are not data-only; weights_only loads numeric arrays", "other")
    return np.dtype(d, align=bool(align), copy=bool(copy))


def _np_reconstruct(subtype, shape, dtype_code):
    if subtype is not np.ndarray or shape != (0,):
        raise _refuse("weights_only loads plain NumPy arrays only (no subclasses)", "other")
    return np.ndarray((0,), np.uint8)


def _np_scalar(dtype, data=None):
    if not isinstance(dtype, np.dtype) or dtype.kind not in _NUMERIC_KINDS or not isinstance(data, bytes) \
            or len(data) != dtype.itemsize:
        raise _refuse("a NumPy scalar in a weights-only file must be numeric and match its dtype's size", "other")
    return np.frombuffer(data, dtype)[0]


def _build_default():
    from .. import _utils, dtypes as _dt, storage
    from ..device import device
    from ..nn.parameter import Parameter
    from ..ops import creation
    from ..tensor import Size, Tensor
    from . import _get_layout
    table = {"collections.OrderedDict": _Entry(OrderedDict, True), "collections.Counter": _Entry(Counter, True),
             "builtins.set": _Entry(set, True), "builtins.complex": _Entry(complex, True),
             "builtins.bytearray": _Entry(_bytearray, True), "_codecs.encode": _Entry(_codecs_encode, True),
             "builtins.bytes": _Entry(_empty_bytes, True),
             "torch.Size": _Entry(Size, True), "torch.device": _Entry(device, True),
             "torch.Tensor": _Entry(Tensor, False), "torch.nn.parameter.Parameter": _Entry(Parameter, True),
             "torch.storage.TypedStorage": _Entry(storage.TypedStorage, False),
             "torch.storage.UntypedStorage": _Entry(storage.UntypedStorage, False),
             "torch.serialization._get_layout": _Entry(_get_layout, True),
             "torch._tensor._rebuild_from_type_v2": _Entry(_utils._rebuild_from_type_v2, True)}
    for name in ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
                 "_rebuild_parameter_with_state", "_rebuild_device_tensor_from_numpy",
                 "_rebuild_device_tensor_from_cpu_tensor", "_rebuild_meta_tensor_no_storage", "_rebuild_qtensor",
                 "_rebuild_sparse_tensor", "_rebuild_nested_tensor", "_rebuild_wrapper_subclass"):
        table[f"torch._utils.{name}"] = _Entry(getattr(_utils, name), True)
    for name, cls in storage.LEGACY_STORAGES.items():
        table[f"torch.{name}"] = table[f"torch.cuda.{name}"] = _Entry(cls, False)
    for d in _dt.ALL:
        table[f"torch.{d.name}"] = _Entry(d, False)
        legacy = getattr(creation, d._legacy, None)
        if legacy is not None:
            table[f"torch.{d._legacy}"] = table[f"torch.cuda.{d._legacy}"] = _Entry(legacy, False)
    for mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
        table[f"{mod}._reconstruct"] = _Entry(_np_reconstruct, True)
        table[f"{mod}.scalar"] = _Entry(_np_scalar, True)
    for name in _TORCH_ONLY_DTYPES:
        table[f"torch.{name}"] = _Entry(_Missing(f"torch.{name}"), False)
    table["numpy.ndarray"] = _Entry(np.ndarray, False)
    table["numpy.dtype"] = _Entry(_np_dtype, True)
    return table


class _Missing:
    """An allowed PyTorch global tensorplug has no counterpart for (using it is a CheckpointError)."""

    def __init__(self, name):
        self.name = name


# dtypes and quantization schemes PyTorch's weights-only unpickler admits that tensorplug does not have
_TORCH_ONLY_DTYPES = ("complex32", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                      "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits16", "bits1x8", "bits2x4",
                      "bits4x2", "bits8", "qint8", "qint32", "quint8", "quint4x2", "quint2x4", "per_tensor_affine",
                      "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
                      "per_channel_affine_float_qparams", *(f"int{i}" for i in range(1, 8)),
                      *(f"uint{i}" for i in range(1, 8)))

_default = []


def allowed_globals():
    """{name: entry} of everything weights_only admits now (the defaults and the user's)."""
    if not _default:
        _default.append(_build_default())
    table = dict(_default[0])
    for g in _user_globals:
        obj, name = g if isinstance(g, tuple) else (g, None)
        for key in _keys(obj, name):
            table[key] = _Entry(obj, True, True)
    return table


def _keys(obj, name):
    if name is not None:
        return (_canonical(*name.rsplit(".", 1)),) if "." in name else (_canonical("builtins", name),)
    from .pickling import export_name
    module = getattr(obj, "__module__", None) or "builtins"
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    try:
        return (_canonical(module, qual), _canonical(*export_name(obj, module, qual)))
    except pickle.PicklingError:        # not importable under its name: only that name can match
        return (_canonical(module, qual),)


def _canonical(module, name):
    """'module.name' with Python 2 names and tensorplug. written as PyTorch's (torch.)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    if module == "tensorplug" or module.startswith("tensorplug."):
        module = "torch" + module[len("tensorplug"):]
    return f"{module}.{name}"


def add_safe_globals(safe_globals):
    """Allow these globals in weights_only loads: classes/functions, or (obj, "module.name") pairs
    for an object pickled under another name."""
    for g in safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2 or not isinstance(g[1], str):
                raise ValueError(f"expected (object, 'module.name'), got {g!r}")
        _user_globals.append(g)


def get_safe_globals():
    """The globals add_safe_globals / safe_globals have allowed (a copy of the list)."""
    return list(_user_globals)


def clear_safe_globals():
    """Forget every global add_safe_globals allowed."""
    _user_globals.clear()


class safe_globals:
    """Context manager: these globals are allowed inside the `with` block only."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self._saved = list(_user_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _user_globals[:] = self._saved


# -- the interpreter ---------------------------------------------------------------------------------------
class Unpickler:
    """Reads one pickle from `data` (a bytes-like object) at `pos`; `load()` returns the object and
    leaves `self.pos` after its STOP. `persistent_load(pid)` resolves persistent ids (storages)."""

    def __init__(self, data, *, persistent_load=None, encoding="utf-8", errors="strict", pos=0, where=None):
        self.data = bytes(data) if not isinstance(data, (bytes, bytearray)) else data
        self.pos = pos
        self.persistent_load = persistent_load
        self.encoding, self.errors = encoding, errors
        self.where = where

    # reading ------------------------------------------------------------------------------------------
    def _read(self, n):
        p = self.pos
        if n < 0 or p + n > len(self.data):
            raise corrupted(self.where, "the pickle data was truncated")
        self.pos = p + n
        return self.data[p:p + n]

    def _readline(self):
        p = self.pos
        e = self.data.find(b"\n", p)
        if e < 0:
            raise corrupted(self.where, "the pickle data was truncated")
        self.pos = e + 1
        return self.data[p:e]

    def _u(self, fmt, n):
        return struct.unpack(fmt, self._read(n))[0]

    def _pop_mark(self):
        if not self.metastack:
            raise corrupted(self.where, "malformed pickle: MARK missing")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _pop(self):
        if not self.stack:
            raise corrupted(self.where, "malformed pickle: the stack is empty")
        return self.stack.pop()

    def _top(self):
        if not self.stack:
            raise corrupted(self.where, "malformed pickle: the stack is empty")
        return self.stack[-1]

    def _decode(self, raw):
        if self.encoding == "bytes":
            return bytes(raw)
        return bytes(raw).decode(self.encoding, self.errors)

    # the loop -----------------------------------------------------------------------------------------
    def load(self):
        self.stack, self.metastack, self.memo = [], [], {}
        self._passthrough = None
        self.allowed = allowed_globals()
        self.user_types = {e.obj for e in self.allowed.values() if e.user and isinstance(e.obj, type)}
        self.callables = {id(e.obj) for e in self.allowed.values() if e.call}
        self.from_type = self.allowed["torch._tensor._rebuild_from_type_v2"].obj
        data, ops = self.data, _OPS
        try:
            while True:
                if self.pos >= len(data):
                    raise corrupted(self.where, "the pickle data was truncated (no STOP)")
                code = data[self.pos]
                self.pos += 1
                op = ops.get(code)
                if op is None:
                    if code in _REFUSED:
                        raise _refuse(f"\n\nUnsupported operand {code}", "other")
                    raise corrupted(self.where, f"malformed pickle: unknown opcode {code:#04x} at byte "
                                                f"{self.pos - 1}")
                if op(self) is _STOP:
                    return self._pop()
        except (pickle.UnpicklingError, CheckpointError):
            raise
        except RecursionError:
            raise corrupted(self.where, "the pickle is nested too deeply") from None
        except MemoryError:
            raise corrupted(self.where, "the pickle needs more memory than is available") from None
        except Exception as e:
            if e is self._passthrough:      # from map_location: the caller's error, not the file's
                raise
            if isinstance(e, RuntimeError):     # the rebuild functions' checks say what is wrong
                raise corrupted(self.where, str(e)) from e
            raise corrupted(self.where, f"malformed pickle ({type(e).__name__}: {e})") from e

    # opcodes ------------------------------------------------------------------------------------------
    def op_proto(self):
        v = self._read(1)[0]
        if v > 5:
            raise corrupted(self.where, f"unsupported pickle protocol {v}")

    def op_frame(self):
        self._read(8)               # framing only groups opcodes; the data is all in memory

    def op_stop(self):
        return _STOP

    def op_mark(self):
        self.metastack.append(self.stack)
        self.stack = []

    def op_pop(self):
        if self.stack:
            self.stack.pop()
        else:
            self._pop_mark()

    def op_pop_mark(self):
        self._pop_mark()

    def op_dup(self):
        self.stack.append(self._top())

    def push(self, v):
        self.stack.append(v)

    # constants
    def op_none(self):
        self.push(None)

    def op_true(self):
        self.push(True)

    def op_false(self):
        self.push(False)

    def op_int(self):
        line = self._readline()
        if line == b"00":
            self.push(False)
        elif line == b"01":
            self.push(True)
        else:
            self.push(int(line))

    def op_binint(self):
        self.push(self._u("<i", 4))

    def op_binint1(self):
        self.push(self._read(1)[0])

    def op_binint2(self):
        self.push(self._u("<H", 2))

    def op_long(self):
        line = self._readline()
        if line.endswith(b"L"):
            line = line[:-1]
        self.push(int(line))

    def op_long1(self):
        n = self._read(1)[0]
        self.push(int.from_bytes(self._read(n), "little", signed=True))

    def op_long4(self):
        n = self._u("<i", 4)
        if n < 0:
            raise corrupted(self.where, "malformed pickle: negative LONG4 length")
        self.push(int.from_bytes(self._read(n), "little", signed=True))

    def op_float(self):
        self.push(float(self._readline()))

    def op_binfloat(self):
        self.push(self._u(">d", 8))

    # strings and bytes
    def op_string(self):
        raw = self._readline().rstrip()
        if len(raw) < 2 or raw[0] != raw[-1] or raw[:1] not in (b'"', b"'"):
            raise corrupted(self.where, "malformed pickle: bad STRING quotes")
        self.push(self._decode(codecs.escape_decode(raw[1:-1])[0]))

    def op_binstring(self):
        n = self._u("<i", 4)
        self.push(self._decode(self._read(n)))

    def op_short_binstring(self):
        self.push(self._decode(self._read(self._read(1)[0])))

    def op_unicode(self):
        self.push(str(self._readline(), "raw-unicode-escape"))

    def op_binunicode(self):
        self.push(str(self._read(self._u("<I", 4)), "utf-8", "surrogatepass"))

    def op_binunicode8(self):
        self.push(str(self._read(self._u("<Q", 8)), "utf-8", "surrogatepass"))

    def op_short_binunicode(self):
        self.push(str(self._read(self._read(1)[0]), "utf-8", "surrogatepass"))

    def op_binbytes(self):
        self.push(bytes(self._read(self._u("<I", 4))))

    def op_short_binbytes(self):
        self.push(bytes(self._read(self._read(1)[0])))

    def op_binbytes8(self):
        self.push(bytes(self._read(self._u("<Q", 8))))

    def op_bytearray8(self):
        self.push(bytearray(self._read(self._u("<Q", 8))))

    # containers
    def op_empty_tuple(self):
        self.push(())

    def op_tuple(self):
        self.push(tuple(self._pop_mark()))

    def op_tuple1(self):
        self.push((self._pop(),))

    def op_tuple2(self):
        if len(self.stack) < 2:
            self._underflow()
        self.stack[-2:] = [tuple(self.stack[-2:])]

    def op_tuple3(self):
        if len(self.stack) < 3:
            self._underflow()
        self.stack[-3:] = [tuple(self.stack[-3:])]

    def _underflow(self):
        raise corrupted(self.where, "malformed pickle: the stack is empty")

    def op_empty_list(self):
        self.push([])

    def op_list(self):
        self.push(self._pop_mark())

    def op_empty_dict(self):
        self.push({})

    def op_dict(self):
        items = self._pop_mark()
        if len(items) % 2:
            raise corrupted(self.where, "malformed pickle: odd number of dict items")
        self.push({items[i]: items[i + 1] for i in range(0, len(items), 2)})

    def op_empty_set(self):
        self.push(set())

    def op_frozenset(self):
        self.push(frozenset(self._pop_mark()))

    def op_append(self):
        v = self._pop()
        self._append(self._top(), [v])

    def op_appends(self):
        items = self._pop_mark()
        self._append(self._top(), items)

    def _append(self, target, items):
        if type(target) is list:
            target.extend(items)
        elif type(target) in self.user_types:
            extend = getattr(target, "extend", None)
            if extend is not None:
                extend(items)
            else:
                for v in items:
                    target.append(v)
        else:
            raise _refuse(f"Can only append to lists, but got {type(target)}", "other")

    def op_setitem(self):
        v = self._pop()
        k = self._pop()
        self._setitems(self._top(), [k, v])

    def op_setitems(self):
        items = self._pop_mark()
        if len(items) % 2:
            raise corrupted(self.where, "malformed pickle: odd number of dict items")
        self._setitems(self._top(), items)

    def _setitems(self, target, items):
        if type(target) not in (dict, OrderedDict, Counter) and type(target) not in self.user_types:
            raise _refuse(f"Can only set items of dicts, but got {type(target)}", "other")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def op_additems(self):
        items = self._pop_mark()
        target = self._top()
        if type(target) is not set:
            raise _refuse(f"Can only add items to sets, but got {type(target)}", "other")
        target.update(items)

    # memo
    def op_put(self):
        self.memo[int(self._readline())] = self._top()

    def op_binput(self):
        self.memo[self._read(1)[0]] = self._top()

    def op_long_binput(self):
        self.memo[self._u("<I", 4)] = self._top()

    def op_memoize(self):
        self.memo[len(self.memo)] = self._top()

    def _get(self, i):
        try:
            self.push(self.memo[i])
        except KeyError:
            raise corrupted(self.where, f"malformed pickle: memo entry {i} is missing") from None

    def op_get(self):
        self._get(int(self._readline()))

    def op_binget(self):
        self._get(self._read(1)[0])

    def op_long_binget(self):
        self._get(self._u("<I", 4))

    # globals and calls
    def _global(self, module, name):
        if not isinstance(module, str) or not isinstance(name, str):
            raise corrupted(self.where, "malformed pickle: STACK_GLOBAL needs two strings")
        key = _canonical(module, name)
        mod = key.rpartition(".")[0]
        top = mod.split(".")[0]
        if top in _BLOCKED:
            raise _refuse(f"Trying to load unsupported GLOBAL {key} whose module {top} is blocked.", "blocked")
        entry = self.allowed.get(key)
        if entry is None:
            shown = key[len("builtins."):] if key.startswith("builtins.") else key
            raise _refuse(f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
                          f"`torch.serialization.add_safe_globals([{shown}])` or the "
                          f"`torch.serialization.safe_globals([{shown}])` context manager to allowlist this "
                          "global if you trust this class/function.")
        if type(entry.obj) is _Missing:
            raise CheckpointError(f"{describe(self.where)} uses {entry.obj.name}, which tensorplug does not have")
        self.push(entry.obj)

    def op_global(self):
        module = self._readline().decode("utf-8")
        name = self._readline().decode("utf-8")
        self._global(module, name)

    def op_stack_global(self):
        name = self._pop()
        module = self._pop()
        self._global(module, name)

    def _callable(self, f, what):
        if id(f) not in self.callables:
            raise _refuse(f"Trying to call {what} for unrecognized function {f!r}", "other")

    def op_reduce(self):
        args = self._pop()
        f = self._pop()
        self._callable(f, "reduce")
        if not isinstance(args, tuple):
            raise corrupted(self.where, "malformed pickle: REDUCE arguments are not a tuple")
        if f is self.from_type and args:    # it calls its first argument: an allowlisted callable only
            self._callable(args[0], "_rebuild_from_type_v2")
        self.push(f(*args))

    def op_newobj(self):
        args = self._pop()
        cls = self._pop()
        self._newobj(cls, args, {})

    def op_newobj_ex(self):
        kwargs = self._pop()
        args = self._pop()
        cls = self._pop()
        if not isinstance(kwargs, dict):
            raise corrupted(self.where, "malformed pickle: NEWOBJ_EX keyword arguments are not a dict")
        self._newobj(cls, args, kwargs)

    def _newobj(self, cls, args, kwargs):
        if not isinstance(cls, type):
            raise _refuse(f"Trying to instantiate a non-class {cls!r}", "other")
        self._callable(cls, "NEWOBJ")
        if not isinstance(args, tuple):
            raise corrupted(self.where, "malformed pickle: NEWOBJ arguments are not a tuple")
        self.push(cls.__new__(cls, *args, **kwargs))

    def op_build(self):
        from .. import _utils
        from ..tensor import Tensor
        state = self._pop()
        inst = self._top()
        t = type(inst)
        if isinstance(inst, Tensor) and (t.__module__.startswith("tensorplug.") or t in self.user_types):
            _utils.set_obj_state(inst, state)
        elif t in (OrderedDict, Counter):
            if isinstance(state, tuple) and len(state) == 2:
                state = state[0]
            if state:
                if not isinstance(state, dict):
                    raise corrupted(self.where, "malformed pickle: BUILD state of a dict is not a dict")
                inst.__dict__.update(state)
        elif t is np.ndarray:
            _np_setstate_array(inst, state)
        elif t is np.dtype or isinstance(inst, np.dtype):
            _np_setstate_dtype(inst, state)
        elif t in self.user_types:
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                _set_plain_state(inst, state)
        else:
            raise _refuse(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                          f"`add_safe_globals`, but got {t}")

    def op_persid(self):
        self._persistent(self._readline().decode("ascii"))

    def op_binpersid(self):
        self._persistent(self._pop())

    def _persistent(self, pid):
        if self.persistent_load is None:
            raise corrupted(self.where, "the pickle refers to data outside it (a persistent id)")
        try:
            self.push(self.persistent_load(pid))
        except CheckpointError:
            raise
        except Exception as e:
            self._passthrough = e
            raise


def _set_plain_state(inst, state):
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        inst.__dict__.update(state)
    if slots:
        for k, v in slots.items():
            setattr(inst, k, v)


def _np_setstate_dtype(d, state):
    # (version, byteorder, subarray, names, fields, elsize, alignment, flags): plain numeric only
    if not isinstance(state, tuple) or len(state) not in (8, 9) or state[1] not in ("<", ">", "|", "=") \
            or any(x is not None for x in state[2:5]) or d.kind not in _NUMERIC_KINDS:
        raise _refuse("a NumPy dtype in a weights-only file must be a plain numeric dtype", "other")
    d.__setstate__(state)


def _np_setstate_array(a, state):
    # (version, shape, dtype, is_fortran, raw bytes)
    if not isinstance(state, tuple) or len(state) != 5:
        raise CheckpointError("malformed NumPy array state")
    _, shape, dtype, fortran, raw = state
    if not isinstance(dtype, np.dtype) or dtype.kind not in _NUMERIC_KINDS or dtype.hasobject:
        raise _refuse("weights_only loads NumPy arrays of numeric dtypes only", "other")
    if not isinstance(shape, tuple) or not all(isinstance(s, int) and s >= 0 for s in shape) \
            or not isinstance(raw, (bytes, bytearray)):
        raise CheckpointError("malformed NumPy array state")
    n = 1
    for s in shape:
        n *= s
    if n * dtype.itemsize != len(raw):
        raise CheckpointError(f"a NumPy array of shape {shape} and dtype {dtype} needs {n * dtype.itemsize} "
                              f"bytes, the file has {len(raw)}")
    a.__setstate__(state)


_STOP = object()
_M = Unpickler
_OPS = {ord(k) if isinstance(k, str) else k: v for k, v in {
    "(": _M.op_mark, ".": _M.op_stop, "0": _M.op_pop, "1": _M.op_pop_mark, "2": _M.op_dup,
    "F": _M.op_float, "I": _M.op_int, "J": _M.op_binint, "K": _M.op_binint1, "L": _M.op_long, "M": _M.op_binint2,
    "N": _M.op_none, "P": _M.op_persid, "Q": _M.op_binpersid, "R": _M.op_reduce, "S": _M.op_string,
    "T": _M.op_binstring, "U": _M.op_short_binstring, "V": _M.op_unicode, "X": _M.op_binunicode,
    "a": _M.op_append, "b": _M.op_build, "c": _M.op_global, "d": _M.op_dict, "}": _M.op_empty_dict,
    "e": _M.op_appends, "g": _M.op_get, "h": _M.op_binget, "j": _M.op_long_binget, "l": _M.op_list,
    "]": _M.op_empty_list, "p": _M.op_put, "q": _M.op_binput, "r": _M.op_long_binput, "s": _M.op_setitem,
    "t": _M.op_tuple, ")": _M.op_empty_tuple, "u": _M.op_setitems, "G": _M.op_binfloat,
    0x80: _M.op_proto, 0x81: _M.op_newobj, 0x85: _M.op_tuple1, 0x86: _M.op_tuple2, 0x87: _M.op_tuple3,
    0x88: _M.op_true, 0x89: _M.op_false, 0x8a: _M.op_long1, 0x8b: _M.op_long4,
    "B": _M.op_binbytes, "C": _M.op_short_binbytes,
    0x8c: _M.op_short_binunicode, 0x8d: _M.op_binunicode8, 0x8e: _M.op_binbytes8, 0x8f: _M.op_empty_set,
    0x90: _M.op_additems, 0x91: _M.op_frozenset, 0x92: _M.op_newobj_ex, 0x93: _M.op_stack_global,
    0x94: _M.op_memoize, 0x95: _M.op_frame, 0x96: _M.op_bytearray8,
}.items()}
# opcodes that exist but run code by other routes (INST, OBJ, the extension registry, out-of-band buffers)
_REFUSED = {ord("i"), ord("o"), 0x82, 0x83, 0x84, 0x97, 0x98}
del _M


def check_nesting(obj, limit, where=None):
    """CheckpointError when containers in obj nest deeper than `limit` (what a later repr or copy of
    the result would hit as a RecursionError). Iterative: any depth is measured safely."""
    height = {}
    stack = [(obj, False)]
    while stack:
        o, done = stack.pop()
        t = type(o)
        if t not in (list, tuple, dict, OrderedDict, set, frozenset, Counter):
            continue
        kids = [*o.keys(), *o.values()] if t in (dict, OrderedDict, Counter) else o
        if done:
            h = 1 + max((height.get(id(k), 0) for k in kids), default=0)
            if h > limit:
                raise corrupted(where, f"its objects are nested more than {limit} levels deep")
            height[id(o)] = h
            continue
        if id(o) in height:
            continue
        height[id(o)] = 0           # in progress (a cycle through it adds nothing)
        stack.append((o, True))
        stack.extend((k, False) for k in kids if id(k) not in height)
