"""typer app: `tensorplug backends list`, `tensorplug demo`."""
from __future__ import annotations

import typer

app = typer.Typer(help="tensorplug: list and check backends, run the demo.", no_args_is_help=True)
backends_app = typer.Typer(help="Inspect compute and communication backends.", no_args_is_help=True)
app.add_typer(backends_app, name="backends")


@backends_app.command("list")
def list_backends():
    """List registered backends with their device type, origin and availability."""
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    for b in [*registry.compute.values(), *registry.communication.values()]:
        ok, reason = b.is_available()
        typer.echo(f"{b.name:10} {b.kind:14} {b.device_type:6} {registry.origin.get(b.name, '?'):28} "
                   f"{'available' if ok else 'unavailable: ' + reason}")
    for p in registry.plugins:
        if p.error:
            typer.echo(f"{p.name:10} {'broken plugin':14} {'-':6} {p.origin:28} error: {p.error}")


@app.command()
def demo():
    """Print the backends and run a small computation."""
    import tensorplug as torch
    list_backends()
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = (x @ x).sum() if hasattr(torch, "matmul") else (x * x).sum()
    y.backward()
    typer.echo(f"x = {x}\ny = {y}\ndy/dx = {x.grad}")
