"""Run a script or module as the program's `__main__`, the way `python SCRIPT ARGS` / `python -m
MODULE ARGS` does, in the running interpreter (what `tensorplug exec` is made of).

The script's module replaces `sys.modules['__main__']` for the rest of the process, so pickling a
class defined in it works and multiprocessing's spawn children re-import it as `__mp_main__`;
sys.argv, sys.path[0], __file__, __spec__ and __loader__ are what python would set. A folder or zip
file runs its `__main__.py` as python does; a .pyc file runs through runpy.
"""
from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import os
import runpy
import signal
import sys
import types
import zipfile

from .alias import alias_torch, resolve


class ProgramNotFound(Exception):
    """The script or module to run does not exist (a usage error, not the program's)."""


def _set_path0(entry):
    # python puts the script's folder (-m: the working directory) first, unless -P / -I
    if sys.flags.safe_path:
        return
    if sys.path:
        sys.path[0] = entry
    else:
        sys.path.insert(0, entry)


def _new_main(**attrs):
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __doc__=None, **attrs)
    sys.modules["__main__"] = main
    return main


def _script_code(path, args):
    """(code, globals) for a script file, folder or zip, with sys.argv and sys.path set; None for a
    .pyc file (runpy runs it)."""
    if not os.path.exists(path):
        raise ProgramNotFound(f"can't open file {os.path.abspath(path)!r}: no such file")
    sys.argv[:] = [path, *args]
    if os.path.isdir(path) or zipfile.is_zipfile(path):
        # python runs the __main__ module found in it, with the folder / zip first on sys.path
        _set_path0(os.path.abspath(path))
        spec = importlib.machinery.PathFinder.find_spec("__main__", [os.path.abspath(path)])
        if spec is None:
            raise ProgramNotFound(f"can't find '__main__' module in {path!r}")
        return _spec_code(spec, package="")
    if path.endswith((".pyc", ".pyo")):
        if not sys.flags.safe_path and sys.path:
            del sys.path[0]        # runpy puts nothing there either
        return None
    _set_path0(os.path.dirname(os.path.realpath(path)))
    filename = os.path.abspath(path)
    with open(filename, "rb") as f:
        source = f.read()
    main = _new_main(__file__=filename, __cached__=None, __package__=None, __spec__=None,
                     __loader__=importlib.machinery.SourceFileLoader("__main__", filename))
    return compile(source, filename, "exec", dont_inherit=True), main.__dict__


def _spec_code(spec, package):
    """(code, globals) for the module `spec` describes, run as __main__."""
    loader = spec.loader
    code = loader.get_code(spec.name) if hasattr(loader, "get_code") else None
    if code is None:
        raise ProgramNotFound(f"no code object available for {spec.name}")
    origin = spec.origin if spec.has_location else None
    main = _new_main(__file__=origin, __cached__=spec.cached, __package__=package, __spec__=spec,
                     __loader__=loader)
    if origin is None:
        del main.__file__
    return code, main.__dict__


def _module_code(name, args):
    """(code, globals) for `-m name`; `torch.X` runs tensorplug's `X`."""
    _set_path0(os.getcwd())
    sys.argv[:] = ["-m", *args]           # as python has it while it looks for the module
    name = resolve(name) or name
    spec = _find(name)
    if spec.submodule_search_locations is not None:
        package = name
        spec = _find(f"{package}.__main__", package)
    code, main_globals = _spec_code(spec, package=spec.parent)
    sys.argv[:] = [main_globals.get("__file__", "-m"), *args]
    return code, main_globals


def _find(name, package=None):
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError as e:
        if not e.name or not (name == e.name or name.startswith(e.name + ".")):
            raise                  # a module the package imports is missing: the program's error
        spec = None
    if spec is None:
        if package is not None:
            raise ProgramNotFound(f"No module named {name}; {package!r} is a package and cannot be "
                                  "directly executed")
        raise ProgramNotFound(f"No module named {name}")
    return spec


def _trim(tb):
    # the frames of this file (the code runs in one of them) are not the program's
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb


def run_program(target: str, args=(), *, module: bool = False):
    """Install the torch alias, then run `target` (a script path, or a module name when module=True)
    with `args` as `python target args` / `python -m target args` would.

    Returns normally when the program does; a SystemExit it raises propagates unchanged. Any other
    exception is reported through sys.excepthook, like an uncaught exception under python, without
    this file's frames, then SystemExit(1) is raised (130 for KeyboardInterrupt, as a shell reports
    python killed by SIGINT). Before anything runs it raises ProgramNotFound when there is no such
    script or module, AlreadyImported (a RuntimeError) when real PyTorch is already imported."""
    alias_torch()
    args = list(args)
    try:
        prepared = _module_code(target, args) if module else _script_code(target, args)
        if prepared is None:
            runpy.run_path(target, run_name="__main__")
        else:
            code, main_globals = prepared
            exec(code, main_globals)
    except (SystemExit, ProgramNotFound):
        raise
    except BaseException as e:
        tb = _trim(e.__traceback__)
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        raise SystemExit(128 + signal.SIGINT if isinstance(e, KeyboardInterrupt) else 1) from None
