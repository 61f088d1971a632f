"""The `tensorplug` command line (typer): `tensorplug ...` or `python -m tensorplug ...`."""


def main():
    from .app import app
    app(prog_name="tensorplug")
