"""`tensorplug exec SCRIPT [ARGS]...` / `tensorplug exec -m MODULE [ARGS]...`: run an unchanged
PyTorch program on tensorplug (`import torch` gives tensorplug), as python would run it. The work is
tensorplug.compat.program's; this only parses the command line."""
from __future__ import annotations

import sys
from typing import List, Optional

import typer

EXIT_USAGE = 2

# one line per paragraph: the help formatter keeps line breaks
HELP = ("Run a PyTorch program unchanged on tensorplug: `tensorplug exec train.py --epochs 3`.\n\n"
        "The program runs as `python SCRIPT ARGS...` (or `python -m MODULE ARGS...`) would run it: the same "
        "sys.argv, __main__, sys.path[0] and exit status. But `import torch` gives tensorplug and "
        "`import torch.X.Y` gives tensorplug.X.Y; a PyTorch module tensorplug lacks fails to import with "
        "an error saying so. Child processes (DataLoader workers, multiprocessing with fork, spawn or "
        "forkserver) get the same alias.\n\n"
        "Everything after SCRIPT belongs to the program, options such as --help included.\n\n"
        "Exit status: the program's; 2 when SCRIPT or MODULE does not exist, or a real torch is "
        "already imported.")


def exec_(
    target: str = typer.Argument(..., metavar="SCRIPT",
                                 help="The Python script (or module, with -m) to run."),
    args: Optional[List[str]] = typer.Argument(None, metavar="ARGS",
                                               help="Arguments for the program, passed on untouched."),
    module: bool = typer.Option(False, "-m", "--module", help="SCRIPT is a module name, as in python -m."),
):
    """Run a PyTorch program unchanged on tensorplug: `tensorplug exec train.py --epochs 3`."""
    from tensorplug.compat.alias import AlreadyImported
    from tensorplug.compat.program import ProgramNotFound, run_program
    _restore_excepthook()
    try:
        run_program(target, args or [], module=module)
    except (ProgramNotFound, AlreadyImported) as e:       # raised before the program starts
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(EXIT_USAGE)


def _restore_excepthook():
    # typer puts its own sys.excepthook in while a command runs; the program gets the usual one
    import typer.main as typer_main
    if sys.excepthook is getattr(typer_main, "except_hook", None):
        sys.excepthook = getattr(typer_main, "_original_except_hook", sys.__excepthook__)


CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False}


def register(app) -> None:
    app.command("exec", help=HELP, context_settings=CONTEXT)(exec_)
