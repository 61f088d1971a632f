"""`tensorplug backends show NAME`, `tensorplug backends check NAME` and `tensorplug info`."""
from __future__ import annotations

import contextlib
import json
import sys
from typing import List, Optional

import typer

from ._console import console, emit, print_table, progress_wanted

EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE = 1, 2, 3


def _err(msg: str, code: int):
    typer.echo(f"Error: {msg}", err=True)
    raise typer.Exit(code)


def _lookup(name: str, compute_only=False):
    """The backend called `name`, or exit 2 naming the registered ones."""
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    backend = registry.compute.get(name) or (None if compute_only else registry.communication.get(name))
    if backend is not None:
        return backend
    if compute_only and name in registry.communication:
        _err(f"{name!r} is a communication backend; `check` runs the conformance suite of compute backends "
             f"({', '.join(sorted(registry.compute))})", EXIT_USAGE)
    known = sorted(registry.compute) + sorted(registry.communication) * (not compute_only)
    broken = [p for p in registry.plugins if p.error and (p.name == name or f"backend {name!r}" in p.error)]
    hint = f"; plugin {name!r} failed to load: {broken[0].error}" if broken else ""
    _err(f"unknown backend {name!r}; registered backends: {', '.join(known) or 'none'}{hint}", EXIT_USAGE)


# -- show ------------------------------------------------------------------------------------------
def kernel_rows(backend) -> list[dict]:
    """One dict per SPI kernel: name, kind (required/optional), status (native/decomposed/missing)."""
    from tensorplug.dispatch.backend_api import REQUIRED
    status = backend.kernel_status()
    return [{"kernel": k, "kind": "required" if k in REQUIRED else "optional", "status": s}
            for k, s in status.items()]


def show(name: str = typer.Argument(..., metavar="NAME", help="Backend name (see `tensorplug backends list`)."),
         as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")):
    """Show a backend: its attributes and kernel table (native / decomposed / missing per kernel)."""
    from tensorplug.dispatch import registry
    from tensorplug.dispatch.backend_api import API_VERSION
    b = _lookup(name)
    ok, reason = registry.available(b)
    info = {"name": b.name, "kind": b.kind, "device": b.device_type, "version": str(b.version),
            "api_version": b.api_version, "tensorplug_api_version": API_VERSION,
            "origin": registry.origin.get(b.name, "?"), "available": bool(ok), "reason": reason or None,
            "priority": getattr(b, "priority", 0)}
    if b.kind == "communication":
        info["collectives"] = {c: callable(getattr(b, c, None)) for c in b.COLLECTIVES}
        if as_json:
            typer.echo(json.dumps(info, indent=2))
            return
        out = console()
        out.print(_describe(info), markup=False)
        print_table(["COLLECTIVE", "STATUS"], [[c, "provided" if v else "missing"]
                                               for c, v in info["collectives"].items()], out=out)
        return
    info["dtypes"] = sorted(b.dtypes)
    info["indexed"] = bool(getattr(b, "indexed", True))
    try:
        rows = kernel_rows(b)
    except Exception as e:  # noqa: BLE001 - a backend whose native_kernels() raises
        _err(f"backend {b.name!r} could not build its kernel table: {type(e).__name__}: {e}", EXIT_FAILED)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("native", "decomposed", "missing")}
    info.update(kernels=rows, counts=counts)
    if as_json:
        typer.echo(json.dumps(info, indent=2))
    else:
        out = console()
        out.print(_describe(info), markup=False)
        out.print(f"dtypes: {' '.join(info['dtypes'])}", markup=False)
        print_table(["KERNEL", "KIND", "STATUS"], [[r["kernel"], r["kind"], r["status"]] for r in rows], out=out)
        out.print(f"{len(rows)} kernels: {counts['native']} native, {counts['decomposed']} decomposed "
                  f"(optional, from required primitives), {counts['missing']} missing", markup=False)
    if counts["missing"]:
        raise typer.Exit(EXIT_FAILED)


def _describe(info):
    avail = "available" if info["available"] else f"unavailable: {info['reason']}"
    return (f"{info['name']}: {info['kind']} backend, device {info['device']}, version {info['version']}, "
            f"SPI version {info['api_version']} (tensorplug provides {info['tensorplug_api_version']}), "
            f"origin {info['origin']}, {avail}")


# -- check -----------------------------------------------------------------------------------------
@contextlib.contextmanager
def _progress(total: int, enabled: bool, out=None):
    """`step(label)`, a context for each check: one line on stderr (or the console `out`) redrawn
    in place (label, bar, count, elapsed time, the check that runs); nothing when not enabled.
    Lines printed meanwhile (-v) appear above it when stdout is the terminal too."""
    if not enabled:
        yield lambda label: contextlib.nullcontext()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column
    bar = Progress(TextColumn("conformance"), BarColumn(bar_width=20), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis")),
                   console=out or console(stderr=True), redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)
    task = bar.add_task("", total=total)

    @contextlib.contextmanager
    def step(label):
        bar.update(task, description=label)
        yield
        bar.advance(task)

    with bar:
        yield step
        bar.update(task, description="")


def check(name: str = typer.Argument(..., metavar="NAME", help="Compute backend to check."),
          pattern: Optional[List[str]] = typer.Option(
              None, "-k", "--pattern", metavar="PATTERN",
              help="Only checks whose id contains PATTERN (or matches it as a glob: 'pointwise.*[float16]'); "
                   "repeat for several."),
          json_file: Optional[str] = typer.Option(None, "--json", metavar="FILE",
                                                  help="Write the full report as JSON to FILE."),
          xfail_file: Optional[List[str]] = typer.Option(
              None, "--xfail-file", metavar="FILE",
              help="Expected failures: lines 'CHECK-ID-OR-GLOB reason' or a JSON object; repeat for several."),
          list_only: bool = typer.Option(False, "--list", help="List the selected check ids and exit."),
          verbose: bool = typer.Option(False, "-v", "--verbose", help="Print every check with its status."),
          max_failures: int = typer.Option(30, "--max-failures", metavar="N",
                                           help="Failures printed in full (all of them in --json)."),
          timeout: float = typer.Option(60.0, "--timeout", metavar="S", min=0,
                                        help="Seconds each check may run; a check still running then fails, "
                                             "naming its kernel (0: no limit)."),
          no_progress: bool = typer.Option(False, "--no-progress",
                                           help="No progress line (there is none when stderr is not a terminal).")):
    """Run the conformance suite on a backend.

    One progress line on a terminal, then a summary per op family; exit code 1 on any failure, 0
    when everything passes or is an expected failure."""
    from tensorplug.testing.conformance import runner
    from tensorplug.dispatch import registry
    b = _lookup(name, compute_only=True)
    ok, reason = registry.available(b, kernels=False)      # guarded: a plugin whose probe raises is reported
    if not ok:
        _err(f"backend {b.name!r} is not available here: {reason}", EXIT_UNAVAILABLE)
    try:
        checks = runner.select(runner.build_checks(b), pattern or None)
        expected = runner.collect_xfails(b, None, xfail_file or ())
    except (OSError, ValueError) as e:
        _err(str(e), EXIT_USAGE)
    except Exception as e:  # noqa: BLE001 - a backend that cannot even build its table
        _err(f"backend {b.name!r} could not build its kernel table: {type(e).__name__}: {e}", EXIT_FAILED)
    if list_only:
        for c in checks:
            typer.echo(c.id)
        return
    if not checks:
        _err(f"no check id matches {' or '.join(pattern or [])!r}", EXIT_USAGE)
    info = runner.backend_info(b)
    console().print(f"Checking backend {b.name!r} (device {b.device_type}, version {info['version']}, SPI "
                    f"{info['api_version']}, {info['origin']}): {len(checks)} checks", markup=False)
    steps = []

    def started(c):
        steps.append(step(c.id))
        steps[-1].__enter__()

    def finished(c, r):
        steps.pop().__exit__(None, None, None)
        if verbose:
            typer.echo(f"{r.status.upper():8} {r.id}" + (f": {r.message}" if r.status == "failed" else ""))
    with _progress(len(checks), progress_wanted(not no_progress)) as step:
        try:
            results = runner.run_checks(b, checks, expected, timeout or None, started, finished)
        except RuntimeError as e:           # the worker process could not start or find the backend
            _err(str(e), EXIT_FAILED)
    report = runner.Report(info, results)
    typer.echo("")
    typer.echo(report.format_summary())
    if json_file:
        report.write_json(json_file)
        typer.echo(f"report written to {json_file}")
    xpassed = [r.id for r in results if r.status == "xpassed"]
    if xpassed:
        typer.echo(f"{len(xpassed)} expected failures passed: {', '.join(xpassed[:10])}"
                   f"{' ...' if len(xpassed) > 10 else ''}")
    if not report.ok:
        typer.echo("")
        typer.echo(report.format_failures(max_failures))
        n = len(report.failures())
        typer.echo(f"\n{b.name}: {n} check{'s' * (n != 1)} failed")
        raise typer.Exit(EXIT_FAILED)
    typer.echo(f"\n{b.name}: all {len(results)} checks conform"
               + (f" ({report.counts()['xfailed']} expected failures)" if report.counts()["xfailed"] else ""))


# -- info ------------------------------------------------------------------------------------------
def collect_info() -> dict:
    """The environment report (tensorplug.utils.collect_env.get_env_info)."""
    from tensorplug.utils.collect_env import get_env_info
    return get_env_info()


def info(as_json: bool = typer.Option(False, "--json", help="Print JSON (for tools).")):
    """What a bug report needs: versions, OS, CPU, BLAS, MPI, CUDA, devices, configuration, plugins.

    The same as `python -m tensorplug.utils.collect_env`, with tables."""
    from rich.table import Table
    from rich.text import Text

    from tensorplug.utils.collect_env import summary_rows
    data = collect_info()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    out = console()
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for field, value in summary_rows(data):
        grid.add_row(field, Text(value))
    emit(out, grid)
    rows = []
    for d in data["devices"]:
        if d["error"]:
            state = d["error"]
        else:
            state = f"{d['selected']} (selected by {d['selected_by']}), {d['count']} device{'s' * (d['count'] != 1)}"
        rows.append([d["device"], ", ".join(d["backends"]), state])
    out.print()
    print_table(["DEVICE", "BACKENDS", "SELECTED"], rows, out=out, no_wrap=("DEVICE",))
    for c in data["communication"]:
        out.print(f"communication backend {c['name']}: "
                  + ("available" if c["available"] else f"unavailable: {c['reason']}"), markup=False)
    out.print()
    print_table(["SETTING", "VALUE", "SOURCE"], [[s["setting"], s["value"], s["source"]] for s in data["settings"]],
                out=out)
    if data["config_error"]:
        out.print(f"configuration error: {data['config_error']}", markup=False)
    out.print()
    print_table(["PLUGIN", "ORIGIN", "BACKENDS / ERROR"],
                [[p["plugin"], p["origin"], f"ERROR {p['error']}" if p["error"] else ", ".join(p["backends"])]
                 for p in data["plugins"]], out=out, no_wrap=("PLUGIN",))


def register(app, backends_app):
    backends_app.command("show")(show)
    backends_app.command("check")(check)
    app.command("info")(info)
