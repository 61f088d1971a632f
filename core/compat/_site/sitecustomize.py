"""Start-up of a child process of an aliased program (see tensorplug.compat.children).

Python's `site` imports this as `sitecustomize` because its folder is first on PYTHONPATH. It
removes that folder from sys.path, installs a finder that sets up tensorplug's alias on the first
import of an aliased name, then runs the sitecustomize that would have run without it.
"""
import os
import sys


class _AliasOnFirstImport:
    """Installs the real alias (tensorplug.compat.alias_torch) when `import torch` first happens, so
    a child that never imports torch does not import tensorplug either."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] not in self.names:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        import importlib.util
        if importlib.util.find_spec("tensorplug") is None:
            return None            # a Python without tensorplug: no alias here
        from tensorplug.compat import alias_torch
        # the environment that started this process already carries the alias to its children
        return alias_torch(inherit=False).find_spec(fullname, path, target)


def _chain(here):
    """Run the next sitecustomize on sys.path (the venv's or the system's), as if this one were absent."""
    import importlib.machinery
    import importlib.util
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.origin is None or os.path.dirname(os.path.abspath(spec.origin)) == here:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _install():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if not (p and os.path.abspath(p) == here)]
    names = [n for n in os.environ.get("TENSORPLUG_ALIAS", "").split(",") if n]
    if names:
        sys.meta_path.insert(0, _AliasOnFirstImport(names))
    _chain(here)


if __name__ == "sitecustomize":       # not when imported as tensorplug.compat._site.sitecustomize
    _install()
