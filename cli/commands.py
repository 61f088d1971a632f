"""`tensorplug backends show NAME`, `tensorplug backends check NAME` and `tensorplug info`."""
from __future__ import annotations

import json
import os
import platform
import sys
from typing import List, Optional

import typer

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
    broken = [p for p in registry.plugins if p.error and p.name == name]
    hint = f"; plugin {name!r} failed to load: {broken[0].error}" if broken else ""
    _err(f"unknown backend {name!r}; registered backends: {', '.join(known) or 'none'}{hint}", EXIT_USAGE)


def _table(header, rows):
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows])


# -- show ------------------------------------------------------------------------------------------
def kernel_rows(backend) -> list[dict]:
    """One dict per SPI kernel: name, kind (required/optional), status (native/decomposed/missing)."""
    from tensorplug.dispatch.backend_api import REQUIRED
    status = backend.kernel_status()
    return [{"kernel": k, "kind": "required" if k in REQUIRED else "optional", "status": s}
            for k, s in status.items()]


def show(name: str = typer.Argument(..., help="Backend name (see `tensorplug backends list`)."),
         as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")):
    """Show a backend: its attributes and kernel table (native / decomposed / missing per kernel)."""
    from tensorplug.dispatch import registry
    from tensorplug.dispatch.backend_api import API_VERSION
    b = _lookup(name)
    ok, reason = b.is_available()
    info = {"name": b.name, "kind": b.kind, "device": b.device_type, "version": str(b.version),
            "api_version": b.api_version, "tensorplug_api_version": API_VERSION,
            "origin": registry.origin.get(b.name, "?"), "available": bool(ok), "reason": reason or None,
            "priority": getattr(b, "priority", 0)}
    if b.kind == "communication":
        info["collectives"] = {c: callable(getattr(b, c, None)) for c in b.COLLECTIVES}
        if as_json:
            typer.echo(json.dumps(info, indent=2))
            return
        typer.echo(_describe(info))
        typer.echo(_table(["COLLECTIVE", "STATUS"], [[c, "provided" if v else "missing"]
                                                      for c, v in info["collectives"].items()]))
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
        typer.echo(_describe(info))
        typer.echo(f"dtypes: {' '.join(info['dtypes'])}")
        typer.echo(_table(["KERNEL", "KIND", "STATUS"], [[r["kernel"], r["kind"], r["status"]] for r in rows]))
        typer.echo(f"{len(rows)} kernels: {counts['native']} native, {counts['decomposed']} decomposed "
                   f"(optional, from required primitives), {counts['missing']} missing")
    if counts["missing"]:
        raise typer.Exit(EXIT_FAILED)


def _describe(info):
    avail = "available" if info["available"] else f"unavailable: {info['reason']}"
    return (f"{info['name']}: {info['kind']} backend, device {info['device']}, version {info['version']}, "
            f"SPI version {info['api_version']} (tensorplug provides {info['tensorplug_api_version']}), "
            f"origin {info['origin']}, {avail}")


# -- check -----------------------------------------------------------------------------------------
def check(name: str = typer.Argument(..., help="Compute backend to check."),
          pattern: Optional[List[str]] = typer.Option(
              None, "-k", "--pattern", help="Only checks whose id contains PATTERN (or matches it as a glob: "
                                            "'pointwise.*[float16]'); repeat for several."),
          json_file: Optional[str] = typer.Option(None, "--json", help="Write the full report as JSON to FILE."),
          xfail_file: Optional[List[str]] = typer.Option(
              None, "--xfail-file", help="Expected failures: lines 'CHECK-ID-OR-GLOB reason' or a JSON object."),
          list_only: bool = typer.Option(False, "--list", help="List the selected check ids and exit."),
          verbose: bool = typer.Option(False, "-v", "--verbose", help="Print every check with its status."),
          max_failures: int = typer.Option(30, "--max-failures", help="Failures printed in full (all in --json).")):
    """Run the conformance suite on a backend: a progress bar, a summary per op family, and exit code
    1 on any failure (0 when everything passes or is an expected failure)."""
    from tensorplug.testing.conformance import runner
    b = _lookup(name, compute_only=True)
    ok, reason = b.is_available()
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
    typer.echo(f"Checking backend {b.name!r} (device {b.device_type}, version {info['version']}, SPI "
               f"{info['api_version']}, {info['origin']}): {len(checks)} checks")
    results = []
    with runner.selected(b), typer.progressbar(checks, label="conformance", file=sys.stderr, show_pos=True,
                                               item_show_func=lambda c: c.id if c else "") as bar:
        for c in bar:
            r = runner.run_check(c, expected)
            results.append(r)
            if verbose:
                typer.echo(f"{r.status.upper():8} {r.id}" + (f": {r.message}" if r.status == "failed" else ""))
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
def _version(dist):
    import importlib.metadata
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_info() -> dict:
    """Versions, devices and the configuration with the source of each setting."""
    import tensorplug
    from tensorplug.dispatch import config, registry
    from tensorplug.dispatch.backend_api import API_VERSION
    registry.ensure_loaded()
    versions = {"tensorplug": tensorplug.__version__, "python": platform.python_version(),
                **{d: _version(d) for d in ("numpy", "pluggy", "typer", "cupy-cuda12x", "mpi4py")}}
    path = config.config_path()
    if os.environ.get("TENSORPLUG_CONFIG"):
        path_source = "environment TENSORPLUG_CONFIG"
    elif os.environ.get("XDG_CONFIG_HOME"):
        path_source = "XDG_CONFIG_HOME"
    else:
        path_source = "default"
    settings = []
    settings.append({"setting": "config file", "value": str(path),
                     "source": path_source + ("" if path.is_file() else " (file not found)")})
    try:
        chosen = registry.settings()
        config_error = None
    except RuntimeError as e:
        chosen, config_error = {}, str(e)
    for dev, (name, source) in sorted(chosen.items()):
        settings.append({"setting": f"backend for {dev}", "value": name, "source": source})
    strict = os.environ.get("TENSORPLUG_STRICT_PLUGINS", "")
    settings.append({"setting": "strict plugins", "value": "on" if strict not in ("", "0") else "off",
                     "source": "environment TENSORPLUG_STRICT_PLUGINS" if strict else "default"})
    dd = tensorplug.get_default_dtype()
    settings.append({"setting": "default dtype", "value": dd.name if hasattr(dd, "name") else str(dd),
                     "source": "tensorplug.set_default_dtype()" if str(dd) != "tensorplug.float32" else "default"})
    devices = []
    for dev in sorted({b.device_type for b in registry.compute.values()}):
        row = {"device": dev, "backends": [b.name for b in registry.candidates(dev)], "selected": None,
               "selected_by": None, "count": None, "error": None}
        try:
            b = registry.backend_for(dev)
            row.update(selected=b.name, selected_by=registry.selection_reason(dev), count=b.device_count())
        except RuntimeError as e:
            row["error"] = str(e)
        devices.append(row)
    plugins = [{"plugin": p.name, "origin": p.origin, "backends": list(p.backends), "error": p.error}
               for p in registry.plugins]
    comm = [{"name": b.name, "available": b.is_available()[0], "reason": b.is_available()[1] or None}
            for b in registry.communication.values()]
    return {"versions": versions, "api_version": API_VERSION, "executable": sys.executable, "devices": devices,
            "communication": comm, "settings": settings, "config_error": config_error, "plugins": plugins}


def info(as_json: bool = typer.Option(False, "--json", help="Print JSON.")):
    """Versions, devices, configuration (and where each setting came from), plugins."""
    data = collect_info()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    v = data["versions"]
    typer.echo(f"tensorplug {v['tensorplug']} (backend SPI version {data['api_version']}), "
               f"Python {v['python']} ({data['executable']})")
    typer.echo("packages: " + ", ".join(f"{k} {val}" for k, val in v.items()
                                       if k not in ("tensorplug", "python") and val))
    typer.echo("\ndevices:")
    rows = []
    for d in data["devices"]:
        if d["error"]:
            state = d["error"]
        else:
            state = f"{d['selected']} (selected by {d['selected_by']}), {d['count']} device{'s' * (d['count'] != 1)}"
        rows.append([d["device"], ", ".join(d["backends"]), state])
    typer.echo(_table(["DEVICE", "BACKENDS", "SELECTED"], rows))
    for c in data["communication"]:
        typer.echo(f"communication backend {c['name']}: " + ("available" if c["available"] else
                                                             f"unavailable: {c['reason']}"))
    typer.echo("\nconfiguration:")
    typer.echo(_table(["SETTING", "VALUE", "SOURCE"], [[s["setting"], s["value"], s["source"]]
                                                      for s in data["settings"]]))
    if data["config_error"]:
        typer.echo(f"configuration error: {data['config_error']}")
    typer.echo("\nplugins:")
    typer.echo(_table(["PLUGIN", "ORIGIN", "BACKENDS / ERROR"],
                      [[p["plugin"], p["origin"], f"ERROR {p['error']}" if p["error"] else ", ".join(p["backends"])]
                       for p in data["plugins"]]))


def register(app, backends_app):
    backends_app.command("show")(show)
    backends_app.command("check")(check)
    app.command("info")(info)
