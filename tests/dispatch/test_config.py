"""Where configuration comes from: the config file's location and the layered settings with sources."""
from pathlib import Path

from tensorplug.dispatch import config


def test_config_path_default_and_overrides(monkeypatch, tmp_path):
    """TENSORPLUG_CONFIG wins; otherwise $XDG_CONFIG_HOME or ~/.config holds tensorplug/config.toml."""
    monkeypatch.delenv("TENSORPLUG_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config.config_path() == tmp_path / ".config" / "tensorplug" / "config.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config.config_path() == tmp_path / "xdg" / "tensorplug" / "config.toml"
    monkeypatch.setenv("TENSORPLUG_CONFIG", str(tmp_path / "mine.toml"))
    assert config.config_path() == Path(tmp_path / "mine.toml")


def test_settings_layers_and_sources(monkeypatch, tmp_path):
    """Each device type's setting comes from the highest layer that has one, with its source."""
    path = tmp_path / "c.toml"
    path.write_text('[backends]\ncpu = "from_file"\ncuda = "cuda_file"\nNPU = "npu_file"\n')
    monkeypatch.setenv("TENSORPLUG_CONFIG", str(path))
    monkeypatch.setenv("TENSORPLUG_BACKEND_CUDA", "cuda_env")
    monkeypatch.setenv("TENSORPLUG_BACKEND_NPU", "")           # empty: ignored
    settings = config.backend_settings({"cpu": "cpu_api"})
    assert settings["cpu"] == ("cpu_api", "tensorplug.backends.use()")
    assert settings["cuda"] == ("cuda_env", "environment TENSORPLUG_BACKEND_CUDA")
    assert settings["npu"] == ("npu_file", f"config file {path}")


def test_missing_default_config_file_is_no_settings(monkeypatch, tmp_path):
    """An absent default config file means no file settings (a missing file that TENSORPLUG_CONFIG
    names is an error: test_config_errors.py)."""
    monkeypatch.delenv("TENSORPLUG_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert config.backend_settings({}) == {}
