"""The CUDA backend's samplers of the random-distribution family (standard_gamma, poisson, binomial
through CuPy's RandomState, seeded from the generator's counter) on the NumPy-based CuPy stand-in: the
frontend's ops land on the device, follow manual_seed / Generator states, and agree with SciPy. This
checks the backend's logic only, not CuPy (test_cuda_gpu.py runs the conformance suite on a GPU)."""
import numpy as np
from scipy import stats

import tensorplug as torch

N = 20000


def test_native_kernels_are_used(fakecuda):
    status = fakecuda.kernel_status()
    assert {status[k] for k in ("standard_gamma", "poisson", "binomial")} == {"native"}


def test_samples_on_device_reproducible_and_distributed(fakecuda):
    torch.manual_seed(3)
    a = torch._standard_gamma(torch.full((N,), 2.5, dtype=torch.float64, device="fakecuda:1"))
    p = torch.poisson(torch.full((N,), 30.0, device="fakecuda"))
    b = torch.binomial(torch.full((N,), 20.0, device="fakecuda"), torch.full((N,), 0.25, device="fakecuda"))
    assert a.device == torch.device("fakecuda:1") and p.device == torch.device("fakecuda:0")
    assert p.dtype is torch.float32 and b.dtype is torch.float32
    assert stats.kstest(a.cpu().numpy(), stats.gamma(2.5).cdf).pvalue > 1e-3
    assert abs(p.cpu().numpy().mean() - 30.0) < 5 * np.sqrt(30.0 / N)
    assert abs(b.cpu().numpy().mean() - 5.0) < 5 * np.sqrt(20 * 0.25 * 0.75 / N)
    torch.manual_seed(3)
    again = torch._standard_gamma(torch.full((N,), 2.5, dtype=torch.float64, device="fakecuda:1"))
    assert torch.equal(a, again)
    g = torch.Generator(device="fakecuda").manual_seed(9)
    state = g.get_state()
    first = torch.poisson(torch.full((64,), 4.0, device="fakecuda"), generator=g)
    second = torch.poisson(torch.full((64,), 4.0, device="fakecuda"), generator=g)
    assert not torch.equal(first, second)
    g.set_state(state)
    assert torch.equal(torch.poisson(torch.full((64,), 4.0, device="fakecuda"), generator=g), first)
