"""Choosing among several backends of one device type: priority, select hook, environment variable,
config file and API (precedence API > environment > file), and the errors for bad choices."""
import pytest

import tensorplug as torch
import tensorplug.backends
from tensorplug.dispatch import hookimpl, registry


@pytest.fixture
def alt(add_backend):
    """A second cpu backend, "numpy_alt", that counts its kernel calls; lower priority than numpy."""
    return add_backend("numpy_alt", priority=-5, counting=True)


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    """write(text) writes a config file that TENSORPLUG_CONFIG points to."""
    path = tmp_path / "tensorplug.toml"
    monkeypatch.setenv("TENSORPLUG_CONFIG", str(path))

    def write(text):
        path.write_text(text)
        registry.reset_selection()
        return path
    return write


def _selected():
    return tensorplug.backends.selected("cpu").name


def test_unconfigured_selection_takes_the_highest_priority(add_backend):
    """Without configuration, the available backend with the highest priority serves the device."""
    assert _selected() == "numpy"
    add_backend("numpy_low", priority=-1)
    assert _selected() == "numpy"
    add_backend("numpy_high", priority=10)
    assert _selected() == "numpy_high"
    assert registry.selection_reason("cpu") == "priority"
    assert torch.ones(2).backend.name == "numpy_high"


def test_unavailable_backend_is_passed_over_by_priority(add_backend):
    """A higher-priority backend that is not available is skipped."""
    add_backend("numpy_down", priority=10, available=(False, "the card is unplugged"))
    assert _selected() == "numpy"


def test_environment_variable_selects(alt, monkeypatch):
    """TENSORPLUG_BACKEND_CPU=numpy_alt selects it; its kernels then run the ops."""
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy_alt")
    registry.reset_selection()
    assert _selected() == "numpy_alt"
    assert registry.selection_reason("cpu") == "environment TENSORPLUG_BACKEND_CPU"
    x = torch.ones(3) + torch.ones(3)
    assert x.backend is alt and x.tolist() == [2.0, 2.0, 2.0]
    assert alt.calls["add"] >= 1


def test_api_use_selects(alt):
    """tensorplug.backends.use(name) selects the backend for its device type."""
    tensorplug.backends.use("numpy_alt")
    assert _selected() == "numpy_alt"
    assert registry.selection_reason("cpu") == "tensorplug.backends.use()"
    assert torch.zeros(2).backend is alt
    tensorplug.backends.reset()
    assert _selected() == "numpy"


def test_config_file_selects(alt, config_file):
    """A config file with [backends] cpu = "numpy_alt" selects it."""
    path = config_file('[backends]\ncpu = "numpy_alt"\n')
    assert _selected() == "numpy_alt"
    assert registry.selection_reason("cpu") == f"config file {path}"


def test_precedence_api_over_environment_over_file(alt, add_backend, config_file, monkeypatch):
    """API > environment variable > config file, each layer overriding the ones below."""
    add_backend("numpy_env", priority=-5)
    config_file('[backends]\ncpu = "numpy_alt"\n')
    assert _selected() == "numpy_alt"
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy_env")
    registry.reset_selection()
    assert _selected() == "numpy_env"
    tensorplug.backends.use("numpy")
    assert _selected() == "numpy"
    tensorplug.backends.reset()                  # back to the environment
    assert _selected() == "numpy_env"
    monkeypatch.delenv("TENSORPLUG_BACKEND_CPU")
    registry.reset_selection()                   # back to the file
    assert _selected() == "numpy_alt"


def test_select_hook_chooses_when_unconfigured(alt):
    """A plugin's tensorplug_select_backend hook picks among the available candidates."""
    seen = []

    class Chooser:
        @hookimpl
        def tensorplug_select_backend(self, device_type, candidates):
            seen.append((device_type, [b.name for b in candidates]))
            return "numpy_alt" if device_type == "cpu" else None

    registry.register_plugin(Chooser(), name="chooser")
    registry.reset_selection()
    assert _selected() == "numpy_alt"
    assert registry.selection_reason("cpu") == "a tensorplug_select_backend hook"
    assert seen == [("cpu", ["numpy", "numpy_alt"])]


def test_configuration_beats_the_select_hook(alt, monkeypatch):
    """Configuration is consulted before the hook."""
    class Chooser:
        @hookimpl
        def tensorplug_select_backend(self, device_type, candidates):
            return "numpy_alt"
    registry.register_plugin(Chooser(), name="chooser")
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy")
    registry.reset_selection()
    assert _selected() == "numpy"


def test_select_hook_naming_an_unknown_backend_is_an_error():
    """A hook that returns a name that is not an available candidate gives a clear error."""
    class Chooser:
        @hookimpl
        def tensorplug_select_backend(self, device_type, candidates):
            return "ghost"
    registry.register_plugin(Chooser(), name="ghost-chooser")
    registry.reset_selection()
    with pytest.raises(RuntimeError, match="hook chose 'ghost'"):
        torch.zeros(1)


def test_unknown_name_in_environment_names_the_known_backends(alt, monkeypatch):
    """An unknown backend in TENSORPLUG_BACKEND_CPU fails with the variable and the known names."""
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy_typo")
    registry.reset_selection()
    with pytest.raises(RuntimeError) as info:
        torch.zeros(1)
    msg = str(info.value)
    assert "TENSORPLUG_BACKEND_CPU" in msg and "'numpy_typo'" in msg
    assert "numpy" in msg and "numpy_alt" in msg and "cuda" in msg


def test_unknown_name_in_config_file_names_the_file_and_known_backends(config_file):
    """An unknown backend in the config file fails naming the file and the registered backends."""
    path = config_file('[backends]\ncpu = "numpyy"\n')
    with pytest.raises(RuntimeError, match=r"config file .*asks for backend 'numpyy'.*registered: cuda, numpy"):
        torch.zeros(1)
    assert str(path) in str(pytest.raises(RuntimeError, torch.zeros, 1).value)


def test_unknown_name_in_use_names_the_known_backends():
    """use() of an unknown name raises ValueError listing the registered compute backends."""
    with pytest.raises(ValueError, match=r"unknown backend 'numpyy'; registered compute backends: cuda, numpy"):
        tensorplug.backends.use("numpyy")


def test_backend_of_another_device_type_is_refused(monkeypatch):
    """Configuring a cuda backend for cpu is an error that names both device types."""
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "cuda")
    registry.reset_selection()
    with pytest.raises(RuntimeError, match="serves device 'cuda'"):
        torch.zeros(1)
    with pytest.raises(ValueError, match="serves device type 'cuda', not 'cpu'"):
        tensorplug.backends.use("cuda", "cpu")


def test_malformed_config_file_is_reported(config_file):
    """A config file that is not TOML fails with its path in the message."""
    path = config_file("[backends\ncpu = numpy\n")
    with pytest.raises(RuntimeError, match="cannot read config file"):
        torch.zeros(1)
    assert str(path) in str(pytest.raises(RuntimeError, torch.zeros, 1).value)


def test_unavailable_backend_cannot_be_selected(add_backend, monkeypatch):
    """Selecting an unavailable backend, by API or environment, raises with its reason."""
    add_backend("numpy_down", available=(False, "the card is unplugged"))
    with pytest.raises(RuntimeError, match="'numpy_down' is not available: the card is unplugged"):
        tensorplug.backends.use("numpy_down")
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy_down")
    registry.reset_selection()
    with pytest.raises(RuntimeError, match="not available: the card is unplugged"):
        torch.zeros(1)


def test_cuda_backend_reports_why_it_is_unavailable():
    """Without CuPy/GPU the cuda backend is listed, unavailable with a reason; using it raises."""
    cuda = tensorplug.backends.get("cuda")
    ok, reason = cuda.is_available()
    if ok:
        pytest.skip("a usable CUDA backend is present on this machine")
    assert reason
    with pytest.raises(RuntimeError, match=r"not available"):
        tensorplug.backends.use("cuda")
    with pytest.raises(RuntimeError) as info:
        torch.zeros(2, device="cuda")
    assert "'cuda'" in str(info.value) and reason in str(info.value)
    with pytest.raises(RuntimeError, match=reason.split(" (")[0]):
        torch.zeros(2).cuda()


def test_device_type_without_backend_is_a_clear_error():
    """A device type no backend serves lists the known device types."""
    with pytest.raises(RuntimeError, match=r"no available backend for device type 'tpu' "
                                           r"\(known device types: cpu, cuda\)"):
        torch.zeros(1, device="tpu")


def test_backend_missing_required_kernels_is_refused(add_backend, monkeypatch):
    """A backend lacking required kernels is unavailable, naming what is missing: priority passes it
    over, and asking for it by name is an error that lists them."""
    partial = add_backend("numpy_partial", priority=10, drop=("matmul", "add"))
    assert registry.available(partial) == (False, "lacks required kernels: add, matmul")
    assert torch.zeros(1).backend.name == "numpy"
    with pytest.raises(RuntimeError, match="'numpy_partial' is not available: lacks required kernels: add, matmul"):
        tensorplug.backends.use("numpy_partial")
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy_partial")
    registry.reset_selection()
    with pytest.raises(RuntimeError, match="which is not available: lacks required kernels: add, matmul"):
        torch.zeros(1)


def test_optional_kernels_fall_back_to_decompositions(add_backend):
    """A backend without native optional kernels gets the frontend's decompositions."""
    b = add_backend("numpy_min", priority=10, drop=("sigmoid", "log1p", "softmax"))
    status = b.kernel_status()
    assert status["sigmoid"] == status["log1p"] == status["softmax"] == "decomposed"
    assert status["add"] == "native"
    x = torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64)
    assert x.backend is b
    assert torch.sigmoid(x).tolist() == pytest.approx([0.11920292202211755, 0.5, 0.9525741268224334])
    assert torch.log1p(torch.tensor([1e-10], dtype=torch.float64)).item() == pytest.approx(1e-10, rel=1e-12)


def test_switching_backend_keeps_existing_tensors_and_refuses_mixing(alt):
    """Tensors keep the backend that made them; mixing two cpu backends in one op is refused."""
    a = torch.ones(2)
    tensorplug.backends.use("numpy_alt")
    b = torch.ones(2)
    assert a.backend.name == "numpy" and b.backend is alt
    with pytest.raises(RuntimeError, match="two different backends"):
        a + b
    assert (a.to("cpu") + b).backend is alt     # .to() re-homes a tensor on the current backend


def test_selection_is_cached_until_reset(alt, monkeypatch):
    """The environment is read when a device type is first used (and after reset_selection)."""
    assert _selected() == "numpy"
    monkeypatch.setenv("TENSORPLUG_BACKEND_CPU", "numpy_alt")
    assert _selected() == "numpy"
    registry.reset_selection("cpu")
    assert _selected() == "numpy_alt"
