"""The import hook behind `alias_torch()`: `import torch.X.Y` gives the module `tensorplug.X.Y`.

A `sys.meta_path` finder, first in the list, maps every name under an alias (see `ALIASES`) onto the
target package and hands the import system the target's own module object, so `torch.nn is
tensorplug.nn` and `sys.modules['torch.nn']` is that module too. Nothing named torch exists on disk;
when no alias is installed, `import torch` finds whatever the environment has (or nothing).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

# alias -> the tensorplug package it stands for, one line each; alias_torch() installs them all
ALIASES = {
    "torch": "tensorplug",
    "torchvision": "tensorplug.vision",
}


def resolve(name: str):
    """The tensorplug module name an aliased name stands for (`torch.nn` -> `tensorplug.nn`), or
    None when `name` is not under an alias."""
    head, dot, rest = name.partition(".")
    target = ALIASES.get(head)
    if target is None:
        return None
    return target + dot + rest


def _exists(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _probing() -> bool:
    """Whether `importlib.util.find_spec` asked (a "does torch.X exist?" check must get None, as it
    would from PyTorch), rather than an import statement (which gets the explaining error)."""
    frame = sys._getframe(2)
    for _ in range(3):
        if frame is None:
            return False
        if frame.f_code is importlib.util.find_spec.__code__:
            return True
        frame = frame.f_back
    return False


class AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds aliased names and loads them as the already-importable tensorplug module."""

    def find_spec(self, fullname, path=None, target=None):
        real = resolve(fullname)
        if real is None:
            return None
        if not _exists(real):
            if _probing():
                return None
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: {fullname.partition('.')[0]} is tensorplug in this program "
                f"and tensorplug has no {real!r} (a PyTorch module tensorplug does not provide)",
                name=fullname)
        return importlib.machinery.ModuleSpec(fullname, self, loader_state=real)

    def create_module(self, spec):
        module = importlib.import_module(spec.loader_state)
        # the import system sets module.__spec__ to the alias spec next; exec_module puts it back
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        alias_spec = module.__spec__
        module.__spec__ = alias_spec.loader_state

    def get_code(self, fullname):
        """runpy (`python -m torch.X`) runs the code of the tensorplug module the name stands for."""
        real = resolve(fullname)
        return importlib.util.find_spec(real).loader.get_code(real)

    def __repr__(self):
        return f"<tensorplug alias finder {', '.join(f'{a} -> {t}' for a, t in ALIASES.items())}>"


_FINDER = AliasFinder()


class AlreadyImported(RuntimeError):
    """A real module of an aliased name (PyTorch's torch) is imported already."""


def is_aliased() -> bool:
    """Whether the alias is installed in this interpreter."""
    return _FINDER in sys.meta_path


def alias_torch(*, inherit: bool = True) -> AliasFinder:
    """Make `import torch` (and `torch.X.Y`) give tensorplug in this interpreter.

    inherit: child processes (multiprocessing spawn / forkserver, DataLoader workers, subprocesses
    running this Python) get the alias too, through the environment (see
    `tensorplug.compat.children`); fork children have it anyway.

    Raises AlreadyImported (a RuntimeError) when real PyTorch is already imported: its objects and
    tensorplug's cannot be mixed. Calling it again is harmless."""
    for alias, target in ALIASES.items():
        present = sys.modules.get(alias)
        if present is not None and present is not sys.modules.get(target):
            where = getattr(present, "__file__", None) or repr(present)
            raise AlreadyImported(
                f"cannot alias {alias!r} to {target!r}: a real {alias!r} is already imported "
                f"in this process ({where}); the alias must come before anything imports it "
                f"(`tensorplug exec` installs it at start-up)")
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    if inherit:
        from . import children
        children.export(ALIASES)
    return _FINDER


def unalias_torch() -> None:
    """Undo `alias_torch()`: remove the hook, the aliased `sys.modules` entries and the children's
    environment. Modules already imported through the alias keep working."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if resolve(n) is not None]:
        if sys.modules[name] is sys.modules.get(resolve(name)):
            del sys.modules[name]
    from . import children
    children.withdraw()
