"""Real entry-point plugins for tests: an installed distribution is a `<name>-<version>.dist-info`
folder (METADATA + entry_points.txt, group `tensorplug`) beside its module, in a folder put on the
PYTHONPATH of a fresh interpreter, so the test process's registry never sees it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

# A NumPy-kernel backend; a case fills in the class body (BODY) and the hook (HOOK).
BACKEND = '''
from tensorplug.backends.numpy_backend import NumpyBackend
from tensorplug.dispatch import hookimpl


class PluginBackend(NumpyBackend):
    name = {name!r}
    priority = 10
    version = "1.0"
{body}

@hookimpl
def tensorplug_register_backends(registry):
    registry.add(PluginBackend())
'''


def backend_source(name: str, body: str = "", extra: str = "") -> str:
    """The module of a plugin registering one cpu backend `name` (priority 10) whose class body
    holds `body`; `extra` is appended to the module (more hooks)."""
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") if body.strip() else "    pass"
    return BACKEND.format(name=name, body=body) + textwrap.dedent(extra)


def add_dist(site, dist: str, source: str, entry_name: str | None = None, version: str = "1.0"):
    """Install distribution `dist` (module `dist`.py) with entry point `entry_name = dist`."""
    site.mkdir(parents=True, exist_ok=True)
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[tensorplug]\n{entry_name or dist} = {dist}\n")
    (site / f"{dist}.py").write_text(textwrap.dedent(source))
    return site


def run(site, args, env=None, timeout=120):
    """`python ARGS` with `site` on the path, no backend configuration of the user's, and `env`."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("TENSORPLUG_BACKEND_") and k != "TENSORPLUG_STRICT_PLUGINS"}
    full["TENSORPLUG_CONFIG"] = os.devnull
    full["COLUMNS"] = "250"
    if site is not None:
        full["PYTHONPATH"] = os.pathsep.join([str(site), full.get("PYTHONPATH", "")])
    full.update(env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=full)


# Runs ops on the cpu, then reports the result, the backend, and every plugin's record.
REPORT = '''
import json
import tensorplug as torch
from tensorplug.dispatch import registry
x = (torch.arange(4, dtype=torch.float64) * 2 + 1) @ torch.ones(4, dtype=torch.float64)
print(json.dumps({"value": x.item(), "backend": x.backend.name, "compute": sorted(registry.compute),
                  "plugins": {p.name + "@" + p.origin: [p.error, p.backends] for p in registry.plugins}}))
'''


def report(site, env=None):
    """The REPORT of a fresh interpreter (asserting it ran)."""
    r = run(site, ["-c", REPORT], env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)
