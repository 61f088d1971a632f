"""typer app: `tensorplug backends list|show|check`, `tensorplug info`, `tensorplug demo`,
`tensorplug run` (MPI), `tensorplug exec` (a PyTorch program on tensorplug).

Exit codes: 0 success; 1 conformance failures; 2 usage errors (an unknown backend name, a bad
option); 3 the backend exists but is not available here.
"""
from __future__ import annotations

import json

import typer

from ._help import HelpGroup

app = typer.Typer(help="tensorplug: list, inspect and check backends; show the configuration; run the demo; "
                  "run PyTorch programs (exec).",
                  no_args_is_help=True, add_completion=False, cls=HelpGroup)
backends_app = typer.Typer(help="Inspect compute and communication backends.", no_args_is_help=True,
                           cls=HelpGroup)
app.add_typer(backends_app, name="backends")


def _print_version(value: bool):
    if value:
        import tensorplug
        typer.echo(f"tensorplug {tensorplug.__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                       help="Print the version and exit.")):
    pass

COLUMNS = ("name", "kind", "device", "version", "origin", "status", "selected")


def backend_rows() -> tuple[list[dict], list[dict]]:
    """One dict per registered backend, and one per plugin that failed to load or register."""
    rows, broken, _ = _backend_report()
    return rows, broken


def _backend_report() -> tuple[list[dict], list[dict], str | None]:
    """backend_rows() and the configuration error (None when the configuration is fine)."""
    from tensorplug.dispatch import config, registry
    registry.ensure_loaded()
    try:
        configured, config_error = registry.settings(), None
    except config.ConfigError as e:
        configured, config_error = {}, str(e)
    # first ask every backend (a plugin whose answer raises is dropped here, listed as broken)
    avail = {id(b): registry.available(b) for b in [*registry.compute.values(), *registry.communication.values()]}
    usable = {b.device_type for b in registry.compute.values() if avail.get(id(b), (False,))[0]}
    rows = []
    compute = sorted(registry.compute.values(), key=lambda b: (b.device_type, -registry.priority(b), b.name))
    for b in [*compute, *sorted(registry.communication.values(), key=lambda b: b.name)]:
        ok, reason = avail.get(id(b)) or registry.available(b)
        row = {"name": b.name, "kind": b.kind, "device": b.device_type, "version": str(b.version),
               "origin": registry.origin.get(b.name, "?"), "available": bool(ok), "reason": reason or None,
               "selected": None, "selected_by": None, "selection_error": None}
        if b.kind == "compute":
            try:
                chosen = registry.backend_for(b.device_type)
            except RuntimeError as e:
                row["selected"] = False
                # worth a line when configuration is at fault, not when the device is simply absent
                if (b.device_type in configured or b.device_type in usable) and str(e) != config_error:
                    row["selection_error"] = str(e)
            else:
                row["selected"] = chosen is b
                row["selected_by"] = registry.selection_reason(b.device_type) if chosen is b else None
        rows.append(row)
    broken = [{"plugin": p.name, "origin": p.origin, "error": p.error} for p in registry.plugins if p.error]
    return rows, broken, config_error


def _cells(row: dict) -> list[str]:
    status = "available" if row["available"] else "unavailable"     # the reason follows the table
    if row["selected"] is None:
        selected = "-"
    elif row["selected"]:
        selected = f"yes ({row['selected_by']})"
    else:
        selected = "no"
    return [row["name"], row["kind"], row["device"], row["version"], row["origin"], status, selected]


@backends_app.command("list")
def list_backends(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")):
    """List registered backends: kind, device type, version, origin, availability, selection."""
    from tensorplug.dispatch import config
    try:
        rows, broken, config_error = _backend_report()
    except config.ConfigError as e:         # before any backend loads (TENSORPLUG_STRICT_PLUGINS)
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps({"backends": rows, "plugin_errors": broken, "config_error": config_error},
                              indent=2))
        return
    from ._console import console, print_table
    out = console()
    print_table([c.upper() for c in COLUMNS], [_cells(r) for r in rows], out=out, no_wrap=("NAME",),
                keep=("ORIGIN",))
    notes = [f"{r['name']} unavailable: {r['reason']}" for r in rows if not r["available"]]
    notes += [f"selection error: {e}" for e in sorted({r["selection_error"] for r in rows if r["selection_error"]})]
    notes += [f"broken plugin {p['plugin']!r} ({p['origin']}): {p['error']}" for p in broken]
    notes += [f"configuration error: {config_error}"] if config_error else []
    for line in notes:
        out.print(line, markup=False)


from . import commands as _commands  # noqa: E402  (registers show, check and info)

_commands.register(app, backends_app)


from .demo import demo as _demo  # noqa: E402  (trains a CNN on the digits that ship with tensorplug)

app.command("demo")(_demo)

from . import run as _run  # noqa: E402  (`tensorplug run -n N script.py`: the MPI launcher)

_run.register(app)

from . import exec as _exec  # noqa: E402  (`tensorplug exec script.py`: a PyTorch program on tensorplug)

_exec.register(app)
