"""Maps the source folders onto the import name: core -> tensorplug, backends -> tensorplug.backends,
cli -> tensorplug.cli. Every folder with an __init__.py under them is shipped."""
import os

from setuptools import setup

ROOTS = {"tensorplug": "core", "tensorplug.backends": "backends", "tensorplug.cli": "cli"}


def packages():
    found = {}
    for name, root in ROOTS.items():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "__pycache__"))]
            if "__init__.py" in filenames:
                rel = os.path.relpath(dirpath, root)
                pkg = name if rel == "." else name + "." + rel.replace(os.sep, ".")
                found[pkg] = dirpath
    return found


PACKAGES = packages()
setup(packages=sorted(PACKAGES), package_dir=PACKAGES)
