"""The `tensorplug` command line (typer)."""


def main():
    from .app import app
    app()
