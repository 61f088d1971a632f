"""How child processes of an aliased program get the alias.

Fork children inherit `sys.meta_path` and `sys.modules`, so they have it already. Every other child
starts a fresh interpreter: multiprocessing's spawn and forkserver (DataLoader workers with a spawn
context, `mp.get_context("spawn").Process`), `subprocess.run([sys.executable, ...])`. A spawn child
re-imports the main script as `__mp_main__` and unpickles objects before any user code of its own
runs, so the alias has to be there from interpreter start-up.

The mechanism is the environment, which every kind of child inherits:
  TENSORPLUG_ALIAS=torch           the aliased names (comma-separated);
  PYTHONPATH=<this folder>/_site   a folder holding only a `sitecustomize.py`, which Python's `site`
                                   runs at start-up. It takes its folder off sys.path again, puts a
                                   tiny finder first on sys.meta_path that installs the alias on the
                                   first import of an aliased name (children that never import torch
                                   pay nothing, not even importing tensorplug), and then runs the
                                   sitecustomize the environment would otherwise have had.
Nothing named torch is ever on disk: a Python outside an aliased program's process tree (no such
variable) sees no alias, and one without tensorplug installed ignores it. Interpreters started
with -S, -E or -I read no sitecustomize / PYTHONPATH and get no alias.
"""
from __future__ import annotations

import os

ENV_VAR = "TENSORPLUG_ALIAS"
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_site")


def export(names) -> None:
    """Let child processes started from now on install the alias of `names`."""
    os.environ[ENV_VAR] = ",".join(names)
    path = os.environ.get("PYTHONPATH")
    if not path:
        os.environ["PYTHONPATH"] = SITE_DIR
    elif SITE_DIR not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = SITE_DIR + os.pathsep + path


def withdraw() -> None:
    """Child processes started from now on get no alias."""
    os.environ.pop(ENV_VAR, None)
    path = os.environ.get("PYTHONPATH")
    if path is not None and SITE_DIR in path.split(os.pathsep):
        rest = path.split(os.pathsep)
        rest.remove(SITE_DIR)
        if rest:
            os.environ["PYTHONPATH"] = os.pathsep.join(rest)
        else:
            del os.environ["PYTHONPATH"]
