"""bfloat16 on the CUDA backend: not declared (CuPy has no bfloat16 arrays), so refused with a clear error."""
import pytest

import tensorplug as torch
from tensorplug.backends.cuda_backend import CudaBackend


def test_cuda_backend_does_not_declare_bfloat16():
    """The CUDA backend's dtypes leave bfloat16 out; the conformance suite builds no bfloat16 check for it."""
    assert "bfloat16" not in CudaBackend.dtypes and "float16" in CudaBackend.dtypes


def test_bfloat16_tensors_are_refused_on_cuda(cuda_standin):
    """Making or moving a bfloat16 tensor to cuda raises TypeError naming the backend; nothing converts."""
    msg = "bfloat16 is not supported on the 'cuda_standin' backend"
    cases = (lambda: torch.zeros(2, dtype=torch.bfloat16, device="cuda"),
             lambda: torch.ones(2, dtype=torch.bfloat16).cuda(),
             lambda: torch.ones(2, device="cuda").bfloat16(),
             lambda: torch.randn(3, dtype=torch.bfloat16, device="cuda"))
    for make in cases:
        with pytest.raises(TypeError, match=msg):
            make()
    assert torch.ones(2, device="cuda").half().dtype is torch.float16
    from tensorplug.testing.conformance import build_checks
    assert not [c for c in build_checks(cuda_standin) if c.dtype == "bfloat16"]
