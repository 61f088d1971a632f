"""Backend selection settings and where each came from, and the parser of boolean variables.

Precedence (highest first): `tensorplug.backends.use()` > environment variable
`TENSORPLUG_BACKEND_<DEVICE>` > config file (`TENSORPLUG_CONFIG`, else
`$XDG_CONFIG_HOME/tensorplug/config.toml` or `~/.config/tensorplug/config.toml`, table
`[backends]`, e.g. `cpu = "numpy"`). Without a setting for a device type, the registry asks the
`tensorplug_select_backend` hook, then takes the highest priority. Settings are read when a device
type's backend is selected (first use, or after `registry.reset_selection()`), never per op.

A file named by `TENSORPLUG_CONFIG` must exist (`/dev/null` means "no file"); the default file may
be absent. Every configuration error is a `ConfigError` naming the file or the variable.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

ENV_PREFIX = "TENSORPLUG_BACKEND_"
CONFIG_VAR = "TENSORPLUG_CONFIG"

_TRUE = frozenset(("1", "true", "yes", "on"))
_FALSE = frozenset(("0", "false", "no", "off"))


class ConfigError(RuntimeError):
    """A configuration file or variable tensorplug cannot use (the message names which)."""


def env_bool(name: str, default: bool = False) -> bool:
    """The boolean environment variable `name`: 1/0, true/false, yes/no, on/off in any case;
    unset or empty means `default`. Anything else is a ConfigError naming the variable."""
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"tensorplug: environment variable {name}={raw!r} is not a boolean; "
                      f"use 1/0, true/false, yes/no or on/off")


def config_path() -> Path:
    env = os.environ.get(CONFIG_VAR)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tensorplug" / "config.toml"


def _read(path: Path, named: bool) -> dict:
    """The parsed TOML of `path` ({} for an absent default file)."""
    where = f"config file {path}" + (f" (named by {CONFIG_VAR})" if named else "")
    if path.is_dir():
        raise ConfigError(f"tensorplug: {where} is a directory, not a TOML file")
    if not path.exists():
        if named:
            raise ConfigError(f"tensorplug: {where} does not exist")
        return {}
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"tensorplug: cannot read {where}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"tensorplug: cannot read {where}: not valid UTF-8 "
                          f"(byte 0x{raw[e.start]:02x} at line {line})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"tensorplug: cannot read {where}: invalid TOML: {e}") from None


def _file_settings() -> tuple[dict, str]:
    path = config_path()
    data = _read(path, named=bool(os.environ.get(CONFIG_VAR)))
    section = data.get("backends", {})
    if not isinstance(section, dict):
        raise ConfigError(f"tensorplug: [backends] in {path} must be a table of device = \"name\"")
    bad = [k for k, v in section.items() if not isinstance(v, str)]
    if bad:
        raise ConfigError(f"tensorplug: [backends] {bad[0]} in {path} must be a backend name in quotes, "
                          f"got {section[bad[0]]!r}")
    return {str(k).lower(): v for k, v in section.items()}, str(path)


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
