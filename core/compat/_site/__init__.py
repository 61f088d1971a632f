"""A folder for PYTHONPATH holding only the `sitecustomize.py` that gives child processes of an
aliased program the alias (see tensorplug.compat.children). It is a package only so that wheels ship it."""
