"""tensorplug.backends.cuda: cuBLAS switches (matmul.*), is_built, the attention-kernel switches; and
that the flag modules load as real submodules, lazily."""
import importlib.util
import subprocess
import sys

import pytest

import tensorplug
import tensorplug.backends.cuda as cuda_flags

matmul = cuda_flags.matmul


@pytest.fixture(autouse=True)
def _restore():
    reduced = dict(cuda_flags._REDUCED)
    sdp = dict(cuda_flags._SDP)
    yield
    cuda_flags._REDUCED.update(reduced)
    cuda_flags._SDP.update(sdp)


def test_flag_modules_are_submodules_loaded_on_first_use():
    """`import tensorplug.backends.cudnn` works, and `tensorplug.backends.cudnn` does without it;
    `import tensorplug` loads none of them."""
    code = ("import sys, tensorplug; names = ['cuda', 'cudnn', 'mps', 'mkldnn', 'openmp']; "
            "print(any(f'tensorplug.backends.{n}' in sys.modules for n in names)); "
            "print(tensorplug.backends.cudnn.enabled, tensorplug.backends.mps.is_available()); "
            "import tensorplug.backends.mkldnn as m; print(m is sys.modules['tensorplug.backends.mkldnn'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "False", "True"]
    assert tensorplug.backends.cuda is cuda_flags and cuda_flags.__name__ == "tensorplug.backends.cuda"


def test_reduced_precision_switches():
    """Both default True; a bool or a tuple/list of bools (its first element is the setting) sets them;
    anything else is PyTorch's TypeError and changes nothing."""
    for name in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(matmul, name) is True
        setattr(matmul, name, False)
        assert getattr(matmul, name) is False
        setattr(matmul, name, (True, False))
        assert getattr(matmul, name) is True
        setattr(matmul, name, [False])
        assert getattr(matmul, name) is False
        for bad in (1, "a", (1, 2)):
            with pytest.raises(TypeError, match=f"^{name} expects a bool or a tuple/list of bools, but got "):
                setattr(matmul, name, bad)
        assert getattr(matmul, name) is False


def test_unknown_matmul_attributes():
    with pytest.raises(AttributeError, match="^Unknown attribute foo$"):
        matmul.foo
    with pytest.raises(AttributeError, match="^Unknown attribute foo$"):
        matmul.foo = 1


def test_is_built_follows_the_cuda_backends(add_backend):
    """Without a usable backend: True exactly when CuPy (the built-in backend's library) imports; a
    plugin serving "cuda" makes it True."""
    if not tensorplug.cuda.is_available():
        assert cuda_flags.is_built() is (importlib.util.find_spec("cupy") is not None)
    add_backend("cuda_plugin", device_type="cuda", indexed=True, priority=50)
    assert cuda_flags.is_built() is True


@pytest.mark.parametrize("kind", ["flash", "mem_efficient", "math", "cudnn"])
def test_sdp_switches(kind):
    enabled = getattr(cuda_flags, f"{kind}_sdp_enabled")
    enable = getattr(cuda_flags, f"enable_{kind}_sdp")
    assert enabled() is True
    enable(False)
    assert enabled() is False
    with pytest.raises(RuntimeError, match=f"^enable_{kind}_sdp expects a bool, but got str$"):
        enable("x")
    assert enabled() is False
    enable(True)
    assert enabled() is True
