"""Configuration errors name the file or the variable, as a ConfigError (a RuntimeError), never a raw
decoding error: malformed TOML, invalid UTF-8, a file named by TENSORPLUG_CONFIG that is missing or a
directory, a backend name that is not a string; and the one parser of boolean variables."""
import pytest
from _plugin_dists import add_dist, backend_source, report, run

import tensorplug as torch
from tensorplug.dispatch import config, registry
from tensorplug.dispatch.config import ConfigError, env_bool


@pytest.fixture
def named(monkeypatch):
    """named(path): TENSORPLUG_CONFIG names `path`; the next op selects its backend again."""
    def point(path):
        monkeypatch.setenv("TENSORPLUG_CONFIG", str(path))
        registry.reset_selection()
        return path
    return point


def _error_of_first_op():
    with pytest.raises(ConfigError) as info:
        torch.ones(1)
    assert info.value.__context__ is None or info.value.__suppress_context__   # no chained decoder error
    return str(info.value)


def test_malformed_toml_names_the_file(named, tmp_path):
    path = named(tmp_path / "c.toml")
    path.write_text('[backends\ncpu = "numpy"\n')
    assert _error_of_first_op() == (f"tensorplug: cannot read config file {path} (named by TENSORPLUG_CONFIG): "
                                    f"invalid TOML: Expected ']' at the end of a table declaration "
                                    f"(at line 1, column 10)")


def test_invalid_utf8_names_the_file_and_the_byte(named, tmp_path):
    path = named(tmp_path / "c.toml")
    path.write_bytes(b'# settings\n[backends]\ncpu = "num\xffpy"\n')
    assert _error_of_first_op() == (f"tensorplug: cannot read config file {path} (named by TENSORPLUG_CONFIG): "
                                    f"not valid UTF-8 (byte 0xff at line 3)")


def test_named_file_that_is_missing_is_an_error(named, tmp_path):
    path = named(tmp_path / "absent.toml")
    assert _error_of_first_op() == (f"tensorplug: config file {path} (named by TENSORPLUG_CONFIG) "
                                    f"does not exist")


def test_named_directory_is_an_error(named, tmp_path):
    named(tmp_path)
    assert _error_of_first_op() == (f"tensorplug: config file {tmp_path} (named by TENSORPLUG_CONFIG) "
                                    f"is a directory, not a TOML file")


def test_default_file_may_be_absent_but_not_a_directory(monkeypatch, tmp_path):
    """Without TENSORPLUG_CONFIG, an absent ~/.config/tensorplug/config.toml is no settings; a
    directory in its place is an error naming it."""
    monkeypatch.delenv("TENSORPLUG_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert config.backend_settings({}) == {}
    (tmp_path / "tensorplug" / "config.toml").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"config file .*tensorplug/config.toml is a directory"):
        config.backend_settings({})


def test_devnull_is_an_empty_configuration(named):
    named("/dev/null")
    assert config.backend_settings({}) == {}
    assert torch.ones(2).sum().item() == 2.0


def test_backend_value_must_be_a_string(named, tmp_path):
    path = named(tmp_path / "c.toml")
    path.write_text("[backends]\ncpu = 3\n")
    assert _error_of_first_op() == f"tensorplug: [backends] cpu in {path} must be a backend name in quotes, got 3"


def test_unreadable_file_names_the_file(named, tmp_path):
    import os
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    path = named(tmp_path / "c.toml")
    path.write_text('[backends]\ncpu = "numpy"\n')
    path.chmod(0)
    try:
        assert _error_of_first_op() == (f"tensorplug: cannot read config file {path} (named by "
                                        f"TENSORPLUG_CONFIG): Permission denied")
    finally:
        path.chmod(0o600)


def test_a_valid_file_still_selects(named, tmp_path):
    path = named(tmp_path / "c.toml")
    path.write_text('[backends]\nCPU = "numpy"\n')
    assert torch.ones(1).backend.name == "numpy"
    assert registry.selection_reason("cpu") == f"config file {path}"


@pytest.mark.parametrize("text,value", [
    *[(t, True) for t in ("1", "true", "TRUE", "True", "yes", "YES", "on", "On", " on ")],
    *[(t, False) for t in ("0", "false", "FALSE", "no", "No", "off", "OFF")],
])
def test_env_bool_spellings(monkeypatch, text, value):
    monkeypatch.setenv("TENSORPLUG_TEST_FLAG", text)
    assert env_bool("TENSORPLUG_TEST_FLAG") is value
    assert env_bool("TENSORPLUG_TEST_FLAG", default=not value) is value


def test_env_bool_unset_or_empty_is_the_default(monkeypatch):
    monkeypatch.delenv("TENSORPLUG_TEST_FLAG", raising=False)
    assert env_bool("TENSORPLUG_TEST_FLAG") is False and env_bool("TENSORPLUG_TEST_FLAG", True) is True
    monkeypatch.setenv("TENSORPLUG_TEST_FLAG", "")
    assert env_bool("TENSORPLUG_TEST_FLAG") is False and env_bool("TENSORPLUG_TEST_FLAG", True) is True


@pytest.mark.parametrize("text", ["2", "maybe", "enabled", "-1", "y"])
def test_env_bool_rejects_other_values_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv("TENSORPLUG_TEST_FLAG", text)
    with pytest.raises(ConfigError) as info:
        env_bool("TENSORPLUG_TEST_FLAG")
    assert str(info.value) == (f"tensorplug: environment variable TENSORPLUG_TEST_FLAG={text!r} is not a "
                               f"boolean; use 1/0, true/false, yes/no or on/off")


def test_strict_plugins_false_is_not_strict(tmp_path):
    """TENSORPLUG_STRICT_PLUGINS=false used to turn strict mode on: a broken real plugin is skipped."""
    site = add_dist(tmp_path, "availplug", backend_source("avail_b", '''
        def is_available(self):
            raise RuntimeError("the probe crashed")
        '''))
    out = report(site, {"TENSORPLUG_STRICT_PLUGINS": "false"})
    assert out["value"] == 16.0 and out["backend"] == "numpy"
    assert "the probe crashed" in out["plugins"]["availplug@availplug 1.0"][0]


def test_invalid_strict_plugins_value_is_a_config_error(tmp_path):
    r = run(None, ["-c", "import tensorplug as t; t.ones(1)"], {"TENSORPLUG_STRICT_PLUGINS": "sometimes"})
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "tensorplug.dispatch.config.ConfigError: tensorplug: environment variable "
        "TENSORPLUG_STRICT_PLUGINS='sometimes' is not a boolean; use 1/0, true/false, yes/no or on/off")
