"""set_float32_matmul_precision / get_float32_matmul_precision, and how PyTorch ties them to
backends.cuda.matmul.allow_tf32 (backends.cudnn.allow_tf32 stays independent)."""
import pytest

import tensorplug as torch
from tensorplug import precision

MIXED = "mixes the legacy API"


@pytest.fixture(autouse=True)
def _fresh():
    """Each test starts from PyTorch's defaults and leaves them."""
    state = (precision._precision, precision._explicit, precision._cuda_tf32)
    for box, value in zip(state, ("highest", False, None)):
        box[0] = value
    yield
    for box, value in zip(state, ("highest", False, None)):
        box[0] = value


def test_default_is_highest_without_tf32():
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is True


@pytest.mark.parametrize("name, tf32", [("high", True), ("medium", True), ("highest", False)])
def test_precision_sets_cuda_tf32(name, tf32):
    torch.set_float32_matmul_precision("medium" if name == "highest" else "highest")
    torch.set_float32_matmul_precision(name)
    assert torch.get_float32_matmul_precision() == name
    assert torch.backends.cuda.matmul.allow_tf32 is tf32
    assert torch.backends.cudnn.allow_tf32 is True


def test_allow_tf32_alone_reads_as_a_precision():
    """Set only through the legacy switch: True reads as "high", False as "highest"."""
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.get_float32_matmul_precision() == "high"
    torch.backends.cuda.matmul.allow_tf32 = False
    assert torch.get_float32_matmul_precision() == "highest"


def test_mixing_the_apis():
    """A legacy switch agreeing with the precision reads fine; a disagreeing one makes the precision
    unreadable until set_float32_matmul_precision is called again (which resets the switch)."""
    torch.set_float32_matmul_precision("high")
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.get_float32_matmul_precision() == "high"
    torch.backends.cuda.matmul.allow_tf32 = False
    with pytest.raises(RuntimeError, match=MIXED):
        torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    torch.backends.cuda.matmul.allow_tf32 = True          # TF32 on, but "medium" is not "high"
    with pytest.raises(RuntimeError, match=MIXED):
        torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    assert torch.get_float32_matmul_precision() == "highest" and torch.backends.cuda.matmul.allow_tf32 is False


def test_cudnn_allow_tf32_is_independent():
    torch.set_float32_matmul_precision("high")
    torch.backends.cudnn.allow_tf32 = False
    try:
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.allow_tf32 is False
        torch.set_float32_matmul_precision("highest")
        assert torch.backends.cudnn.allow_tf32 is False
    finally:
        torch.backends.cudnn.allow_tf32 = True


def test_bad_precisions():
    """Another string warns (PyTorch's text) and changes nothing; a non-string is a RuntimeError; a
    non-bool allow_tf32 too."""
    torch.set_float32_matmul_precision("high")
    for bad in ("low", "HIGH"):
        with pytest.warns(UserWarning, match=f"^{bad} is not one of 'highest', 'high', or 'medium'; the current "
                                              "setFloat32MatmulPrecision call has no effect.$"):
            torch.set_float32_matmul_precision(bad)
    assert torch.get_float32_matmul_precision() == "high"
    for bad, name in ((1, "int"), (None, "NoneType")):
        with pytest.raises(RuntimeError, match=f"^set_float32_matmul_precision expects a str, but got {name}$"):
            torch.set_float32_matmul_precision(bad)
    with pytest.raises(RuntimeError, match="^set_allow_tf32_cublas expects a bool, but got int$"):
        torch.backends.cuda.matmul.allow_tf32 = 1
    assert torch.backends.cuda.matmul.allow_tf32 is True
