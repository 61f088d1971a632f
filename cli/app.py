"""typer app: `tensorplug backends list|show|check`, `tensorplug info`, `tensorplug demo`.

Exit codes: 0 success; 1 conformance failures; 2 usage errors (an unknown backend name, a bad
option); 3 the backend exists but is not available here.
"""
from __future__ import annotations

import json

import typer

app = typer.Typer(help="tensorplug: list, inspect and check backends; show the configuration; run the demo.",
                  no_args_is_help=True, add_completion=False)
backends_app = typer.Typer(help="Inspect compute and communication backends.", no_args_is_help=True)
app.add_typer(backends_app, name="backends")

COLUMNS = ("name", "kind", "device", "version", "origin", "status", "selected")


def backend_rows() -> tuple[list[dict], list[dict]]:
    """One dict per registered backend, and one per plugin that failed to load or register."""
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    configured = registry.settings()
    usable = {b.device_type for b in registry.compute.values() if b.is_available()[0]}
    rows = []
    compute = sorted(registry.compute.values(), key=lambda b: (b.device_type, -b.priority, b.name))
    for b in [*compute, *sorted(registry.communication.values(), key=lambda b: b.name)]:
        ok, reason = b.is_available()
        row = {"name": b.name, "kind": b.kind, "device": b.device_type, "version": str(b.version),
               "origin": registry.origin.get(b.name, "?"), "available": bool(ok), "reason": reason or None,
               "selected": None, "selected_by": None, "selection_error": None}
        if b.kind == "compute":
            try:
                chosen = registry.backend_for(b.device_type)
            except RuntimeError as e:
                row["selected"] = False
                # worth a line when configuration is at fault, not when the device is simply absent
                if b.device_type in configured or b.device_type in usable:
                    row["selection_error"] = str(e)
            else:
                row["selected"] = chosen is b
                row["selected_by"] = registry.selection_reason(b.device_type) if chosen is b else None
        rows.append(row)
    broken = [{"plugin": p.name, "origin": p.origin, "error": p.error} for p in registry.plugins if p.error]
    return rows, broken


def _cells(row: dict) -> list[str]:
    status = "available" if row["available"] else f"unavailable: {row['reason']}"
    if row["selected"] is None:
        selected = "-"
    elif row["selected"]:
        selected = f"yes ({row['selected_by']})"
    else:
        selected = "no"
    return [row["name"], row["kind"], row["device"], row["version"], row["origin"], status, selected]


def _table(rows: list[list[str]]) -> str:
    header = [c.upper() for c in COLUMNS]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in [header, *rows])


@backends_app.command("list")
def list_backends(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")):
    """List registered backends: kind, device type, version, origin, availability, selection."""
    rows, broken = backend_rows()
    if as_json:
        typer.echo(json.dumps({"backends": rows, "plugin_errors": broken}, indent=2))
        return
    typer.echo(_table([_cells(r) for r in rows]))
    errors = sorted({r["selection_error"] for r in rows if r["selection_error"]})
    for e in errors:
        typer.echo(f"selection error: {e}")
    for p in broken:
        typer.echo(f"broken plugin {p['plugin']!r} ({p['origin']}): {p['error']}")


from . import commands as _commands  # noqa: E402  (registers show, check and info)

_commands.register(app, backends_app)


from .demo import demo as _demo  # noqa: E402  (trains a CNN on the digits that ship with tensorplug)

app.command("demo")(_demo)

from . import run as _run  # noqa: E402  (`tensorplug run -n N script.py`: the MPI launcher)

_run.register(app)
