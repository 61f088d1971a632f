"""Backend selection settings and where each came from.

Precedence (highest first): `tensorplug.backends.use()` > environment variable
`TENSORPLUG_BACKEND_<DEVICE>` > config file (`TENSORPLUG_CONFIG`, else
`$XDG_CONFIG_HOME/tensorplug/config.toml` or `~/.config/tensorplug/config.toml`, table
`[backends]`, e.g. `cpu = "numpy"`). Without a setting for a device type, the registry asks the
`tensorplug_select_backend` hook, then takes the highest priority. Settings are read when a device
type's backend is selected (first use, or after `registry.reset_selection()`), never per op.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

ENV_PREFIX = "TENSORPLUG_BACKEND_"


def config_path() -> Path:
    env = os.environ.get("TENSORPLUG_CONFIG")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tensorplug" / "config.toml"


def _file_settings() -> tuple[dict, str]:
    path = config_path()
    if not path.is_file():
        return {}, str(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RuntimeError(f"tensorplug: cannot read config file {path}: {e}") from None
    section = data.get("backends", {})
    if not isinstance(section, dict):
        raise RuntimeError(f"tensorplug: [backends] in {path} must be a table of device = \"name\"")
    return {str(k).lower(): str(v) for k, v in section.items()}, str(path)


def backend_settings(api_choices: dict) -> dict:
    """{device_type: (backend name, source)} from every configuration layer."""
    settings = {}
    file_values, path = _file_settings()
    for dev, name in file_values.items():
        settings[dev] = (name, f"config file {path}")
    for key, value in os.environ.items():
        if key.startswith(ENV_PREFIX) and value:
            settings[key[len(ENV_PREFIX):].lower()] = (value, f"environment {key}")
    for dev, name in api_choices.items():
        settings[dev] = (name, "tensorplug.backends.use()")
    return settings
