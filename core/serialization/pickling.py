"""Pickling under PyTorch's names, both ways.

tensorplug's module paths mirror PyTorch's (`tensorplug.nn.modules.linear.Linear` is
`torch.nn.modules.linear.Linear`), so the Pickler writes `torch.` where an object's module path starts
with `tensorplug.`, and the Unpickler reads `torch.X` as `tensorplug.X`. Objects PyTorch keeps at its
top level (Tensor, Size, device, dtypes, functions such as torch.relu) are written as `torch.<name>`;
objects of tensorplug's own machinery (dispatch, the backends, compat) keep their tensorplug name,
which PyTorch cannot load.

Tensors are written as PyTorch writes them: `_rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())` (Parameters wrap that in `_rebuild_parameter`), where `storage` is a
persistent id `('storage', <legacy storage class>, key, location, numel)` and the storage's bytes go
to a record of their own. Tensors whose NumPy arrays share memory share one storage, so views keep
sharing it after a load, in tensorplug and in PyTorch.
"""
from __future__ import annotations

import importlib
import inspect
import pickle
import types
from collections import OrderedDict

import numpy as np

from .. import _layout, _utils
from .. import dtypes as _dt
from ..device import device as _Device
from ..storage import TypedStorage, UntypedStorage, legacy_class, root_array
from ..ops.shape import row_major_strides
from ..tensor import Size, Tensor, _make
from .errors import CheckpointError, describe

__all__ = ["export_name", "import_name", "TorchPickler", "TorchPicklerMixin", "StorageTable", "pickler_class",
           "make_unpickler"]

# module paths whose objects PyTorch has at its top level (torch.Tensor, torch.float32, torch.relu)
_TOP_LEVEL = ("tensorplug.tensor", "tensorplug.device", "tensorplug.dtypes", "tensorplug.ops")
# tensorplug's own machinery: no PyTorch counterpart, the names stay tensorplug's
_OWN = ("tensorplug.dispatch", "tensorplug.backends.numpy_backend", "tensorplug.backends.cuda_backend",
        "tensorplug.backends.mpi_dist", "tensorplug.compat", "tensorplug.cli", "tensorplug.testing",
        "tensorplug._formatting", "tensorplug.serialization.")
# PyTorch names whose tensorplug object lives elsewhere
_IMPORT_SPECIAL = {("torch._tensor", "_rebuild_from_type_v2"): ("tensorplug._utils", "_rebuild_from_type_v2"),
                   ("torch._tensor", "Tensor"): ("tensorplug", "Tensor")}
_EXPORT_SPECIAL = {("tensorplug._utils", "_rebuild_from_type_v2"): ("torch._tensor", "_rebuild_from_type_v2")}


def _under(module, prefixes):
    return any(module == p or module.startswith(p if p.endswith(".") else p + ".") for p in prefixes)


def _same(a, b):
    """a and b are one function, or wrappers of one (nn.functional wraps the ops for their errors;
    tensorplug.fx's stand-ins wrap the public functions)."""
    return a is b or _unwrap(a) is _unwrap(b)


def _unwrap(fn):
    try:
        return inspect.unwrap(fn)
    except ValueError:                      # a __wrapped__ cycle
        return fn


def export_name(obj, module, qualname):
    """(module, qualname) a pickle names obj by: PyTorch's path for a tensorplug object (see the
    module docstring); PicklingError when obj cannot be found again under the name."""
    if module != "tensorplug" and not module.startswith("tensorplug."):
        return module, qualname
    special = _EXPORT_SPECIAL.get((module, qualname))
    if special is not None:
        return special
    if _under(module, _TOP_LEVEL) and "." not in qualname:
        import tensorplug
        places = [("torch", tensorplug)]
        if module.startswith("tensorplug.ops"):     # F.relu before torch.relu, as PyTorch's layers hold it
            places.insert(0, ("torch.nn.functional", importlib.import_module("tensorplug.nn.functional")))
        for torch_module, namespace in places:
            if _same(getattr(namespace, qualname, None), obj):
                return torch_module, qualname
    try:
        found = resolve(module, qualname)
    except (ImportError, AttributeError):
        found = None
    if not _same(found, obj):
        raise pickle.PicklingError(f"Can't pickle {obj!r}: it's not found as {module}.{qualname}")
    if module == "tensorplug":
        return "torch", qualname
    if _under(module, _TOP_LEVEL + _OWN):
        return module, qualname
    return "torch" + module[len("tensorplug"):], qualname


def import_name(module, name):
    """(module, qualname) in tensorplug of the PyTorch name module.name (others unchanged)."""
    if module != "torch" and not module.startswith("torch."):
        return module, name
    special = _IMPORT_SPECIAL.get((module, name))
    if special is not None:
        return special
    if module in ("torch.cuda", "torch.storage") and name.endswith("Storage") and name not in \
            ("TypedStorage", "UntypedStorage"):
        return "tensorplug", name                  # torch.cuda.FloatStorage: the same legacy class
    return "tensorplug" + module[len("torch"):], name


def resolve(module, qualname):
    """The object at module.qualname (ImportError / AttributeError when missing)."""
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def find_tensorplug(module, name, where=None):
    """The tensorplug object a pickle's GLOBAL module.name stands for; CheckpointError when a PyTorch
    name has no tensorplug counterpart."""
    mod, qual = import_name(module, name)
    if mod == module:
        return None
    try:
        return resolve(mod, qual)
    except (ImportError, AttributeError):
        raise CheckpointError(f"{describe(where)} needs {module}.{name}, which tensorplug does not provide "
                              f"(looked for {mod}.{qual})") from None


# -- saving ------------------------------------------------------------------------------------------------
class _StorageRef:
    """Stands for one storage in the pickle; persistent_id turns it into PyTorch's tuple."""
    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


class StorageTable:
    """The storages of the tensors being saved: one per block of memory, in first-use order.

    `records` lists (key, bytes-like, numel) for the writer. A tensor whose NumPy array is a view (with
    non-negative strides) of a contiguous root array is a view of the root's storage; any other
    tensor (another backend's memory, negative strides) gets a contiguous copy of its own."""

    def __init__(self, legacy=False):
        self._tail = (None,) if legacy else ()     # the legacy format's pids end with a view (None)
        self.records = []
        self._roots = {}            # id(root array) -> (root, ref, base address, dtype)
        self._copies = {}           # id(backend array) -> (array, ref, dtype)

    def _new(self, dt, data, location):
        key = str(len(self.records))
        numel = data.nbytes // dt.itemsize
        self.records.append((key, data, numel))
        return _StorageRef(("storage", legacy_class(dt), key, location, numel) + self._tail)

    def locate(self, t):
        """(storage ref, storage offset, stride) of tensor t, all in elements."""
        arr, dt = t._data, t._dtype
        location = str(t._dev)
        if isinstance(arr, np.ndarray) and arr.size:
            root = root_array(arr)
            entry = self._roots.get(id(root))
            isz = dt.itemsize
            if entry is None and (root.flags.c_contiguous or root.flags.f_contiguous) and root.nbytes % isz == 0:
                data = root.ravel(order="K").view(np.uint8)
                entry = (root, self._new(dt, data, location), root.__array_interface__["data"][0], dt)
                self._roots[id(root)] = entry
            if entry is not None and entry[3] is dt and entry[1].pid[3] == location:
                off = arr.__array_interface__["data"][0] - entry[2]
                if off % isz == 0 and all(s >= 0 and s % isz == 0 for s in arr.strides):
                    return entry[1], off // isz, tuple(s // isz for s in arr.strides)
        entry = self._copies.get(id(arr))
        if entry is None or entry[2] is not dt:
            host = np.ascontiguousarray(t._host())
            entry = self._copies[id(arr)] = (arr, self._new(dt, host.reshape(-1).view(np.uint8), location), dt)
        return entry[1], 0, row_major_strides(arr.shape)


def _plain(t):
    """A plain Tensor over t's data (no graph, no subclass)."""
    p = _make(t._data, t._dtype, t._k, t._dev)
    p._ver = t._ver
    return p


class TorchPicklerMixin:
    """What a Pickler needs to write PyTorch's names, tensors and storages (module docstring)."""

    def __init__(self, file, protocol, storages):
        super().__init__(file, protocol)
        self.storages = storages

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return obj.pid
        if isinstance(obj, (TypedStorage, UntypedStorage)):
            return self._storage_pid(obj)
        return None

    def _storage_pid(self, s):
        t = _utils.tensor_view(s, 0, (s.size(),), (1,))
        ref, off, _ = self.storages.locate(t)
        pid = ref.pid
        if isinstance(s, UntypedStorage):
            return ("storage", UntypedStorage, pid[2], pid[3], s.nbytes()) + pid[5:]
        return pid

    def reducer_override(self, obj):
        cls = type(obj)
        if getattr(cls, "__fx_recorder__", False):
            return obj.__qualname__             # a global, named as the function it stands for
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if cls is _dt.dtype:
            return obj.name                     # a global: torch.float32
        if cls is Size:
            return (Size, (tuple(obj),))
        if cls is _Device:
            return (_Device, (obj.type,) if obj.index is None else (obj.type, obj.index))
        if cls is _layout.layout:               # as PyTorch: torch.serialization._get_layout("torch.sparse_coo")
            from . import _get_layout
            return (_get_layout, (f"torch.{obj._name}",))
        return NotImplemented

    def _reduce_tensor(self, t):
        from ..nn.parameter import Buffer, Parameter
        if t.is_sparse:                         # PyTorch's format: (layout, (indices, values, size, coalesced))
            return (_utils._rebuild_sparse_tensor, (t.layout, (t._i, t._v, Size(t.shape), t._coal)))
        state = _utils.tensor_state(t)
        if isinstance(t, Parameter):
            args = (_plain(t), t.requires_grad, OrderedDict())
            if state:
                return (_utils._rebuild_parameter_with_state, args + (state,))
            return (_utils._rebuild_parameter, args)
        ref, offset, stride = self.storages.locate(t)
        args = (ref, offset, tuple(t._data.shape), stride, t.requires_grad, OrderedDict())
        cls = type(t)
        if cls is Tensor and not state:
            return (_utils._rebuild_tensor_v2, args)
        if isinstance(t, Buffer):               # PyTorch: a Tensor flagged _is_buffer
            persistent = state.pop("persistent", True)
            state = {"persistent": persistent, "_is_buffer": True, **state}
            cls = Tensor
        return (_utils._rebuild_from_type_v2, (_utils._rebuild_tensor_v2, cls, args, state))

    def save_global(self, obj, name=None):
        if type(obj) is _dt.dtype:
            module, name = "torch", obj.name
        else:
            if name is None:
                name = getattr(obj, "__qualname__", None) or obj.__name__
            module = pickle.whichmodule(obj, name)
            if module != "tensorplug" and not module.startswith("tensorplug."):
                return super().save_global(obj, name)
            module, name = export_name(obj, module, name)
        if self.proto >= 4:
            self.save(module)
            self.save(name)
            self.write(pickle.STACK_GLOBAL)
        elif "." in name:
            parent, _, last = name.rpartition(".")
            self.save_reduce(getattr, (resolve(*import_name(module, parent)), last), obj=obj)
            return
        else:
            self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + name.encode("utf-8") + b"\n")
        self.memoize(obj)


class TorchPickler(TorchPicklerMixin, pickle._Pickler):
    """The Pickler of tensorplug.save. pickle's pure-Python Pickler, because only it lets a subclass
    choose the names written for classes and functions (save_global); the data itself goes to
    storage records, so the pickle stays small."""
    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[types.FunctionType] = lambda self, obj: self.save_global(obj)     # (the base's is unbound)


def pickler_class(pickle_module):
    """The Pickler class tensorplug.save uses with `pickle_module` (default: the standard pickle)."""
    if pickle_module is None or pickle_module is pickle:
        return TorchPickler
    # a pure-Python Pickler (dill's, pickle._Pickler) takes the name mapping too; a C one keeps its names
    return type("TorchPickler", (TorchPicklerMixin, pickle_module.Pickler), {})


# -- loading (weights_only=False) --------------------------------------------------------------------------
def make_unpickler(pickle_module, file, persistent_load, where, **load_args):
    """An Unpickler of `pickle_module` reading PyTorch's names as tensorplug's; runs whatever the
    pickle says (the caller chose weights_only=False)."""
    base = pickle_module.Unpickler

    class _Unpickler(base):
        def find_class(self, module, name):
            obj = find_tensorplug(module, name, where)
            if obj is not None:
                return obj
            return super().find_class(module, name)

    u = _Unpickler(file, **load_args)
    u.persistent_load = persistent_load
    return u

