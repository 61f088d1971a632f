"""tensorplug.cuda as PyTorch's without a GPU (what returns 0 / False / None, what raises), its memory
counters and bf16 query on the CUDA backend (over the NumPy-based CuPy stand-in), and the TF32 switch
reaching the backend from set_float32_matmul_precision / backends.cuda.matmul.allow_tf32."""
import types

import pytest

import fake_cupy
import tensorplug as torch
import tensorplug.cuda as cu
from tensorplug import precision

NO_BACKEND = "no available backend for device type 'cuda'"


@pytest.fixture(autouse=True)
def _fresh_precision():
    yield
    precision._precision[0], precision._explicit[0], precision._cuda_tf32[0] = "highest", False, None


def test_without_a_gpu():
    """PyTorch's answers without CUDA: the queries and counters, seeding and empty_cache, set_device(-1),
    and RuntimeError (with the reason) for what needs a device."""
    if cu.is_available():
        pytest.skip("a usable CUDA backend is present on this machine")
    assert cu.is_available() is False and cu.device_count() == 0
    assert cu.is_bf16_supported() is False and cu.is_bf16_supported(including_emulation=False) is False
    assert [cu.memory_allocated(), cu.max_memory_allocated(), cu.memory_reserved(), cu.memory_allocated(0)] == [0] * 4
    assert cu.empty_cache() is None and cu.manual_seed(0) is None and cu.manual_seed_all(0) is None
    assert cu.manual_seed(2**70) is None and cu.set_device(-1) is None
    with pytest.raises(ValueError):
        cu.manual_seed("a")
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index or an integer"):
        cu.set_device(None)
    for call in (cu.synchronize, cu.current_device, cu.get_device_name, lambda: cu.get_device_name(0),
                 lambda: cu.set_device(0), cu.reset_peak_memory_stats, cu.get_device_capability):
        with pytest.raises(RuntimeError, match=NO_BACKEND):
            call()


def test_memory_counters(cuda_standin, monkeypatch):
    """memory_reserved is the pool's total; the peak is recorded by a wrapper of the allocator that
    reset_peak_memory_stats installs (each allocation checks the pool's bytes in use)."""
    used = {"n": 100}
    allocations = []
    monkeypatch.setattr(fake_cupy._pool, "used_bytes", lambda: used["n"])
    monkeypatch.setattr(fake_cupy._pool, "total_bytes", lambda: 4096)
    installed = {}
    monkeypatch.setattr(fake_cupy, "cuda", types.SimpleNamespace(
        **vars(fake_cupy.cuda), get_allocator=lambda: allocations.append,
        set_allocator=lambda fn: installed.setdefault("fn", fn)))
    assert cu.memory_reserved() == 4096 and cu.memory_allocated() == 100
    cu.reset_peak_memory_stats()
    alloc = installed["fn"]
    used["n"] = 900
    alloc(800)                      # an allocation raising the bytes in use to 900
    used["n"] = 300                 # ... later freed
    alloc(8)
    assert allocations == [800, 8]                     # the wrapped allocator still allocates
    assert cu.max_memory_allocated() == 900 and cu.memory_allocated() == 300
    cu.reset_peak_memory_stats("cuda:1")
    assert cu.max_memory_allocated() == 300
    with pytest.raises(RuntimeError, match="invalid device ordinal 2"):
        cu.reset_peak_memory_stats(2)


def test_bf16_support_needs_the_dtype_and_the_device(cuda_standin, monkeypatch):
    """False while the backend lacks bfloat16; with it, True on compute capability >= 8 and, without
    emulation, False below."""
    assert "bfloat16" not in cuda_standin.dtypes and cu.is_bf16_supported() is False
    monkeypatch.setattr(cuda_standin, "dtypes", cuda_standin.dtypes | {"bfloat16"})
    assert cu.is_bf16_supported() is True and cu.is_bf16_supported(including_emulation=False) is True
    monkeypatch.setattr(cuda_standin, "device_capability", lambda i=0: (7, 5))
    assert cu.is_bf16_supported() is True and cu.is_bf16_supported(including_emulation=False) is False


def test_tf32_reaches_the_backend(cuda_standin, standin_state):
    """set_float32_matmul_precision("high") / ("highest") and matmul.allow_tf32 switch the backend's
    cuBLAS compute type; tensorplug.cuda.set_allow_tf32 is the same switch."""
    torch.ones(1, device="cuda")                                # builds the kernel table
    assert standin_state.compute_type["float32"] == 1
    torch.set_float32_matmul_precision("high")
    assert cuda_standin.allow_tf32 and standin_state.compute_type["float32"] == 7 and cu.is_tf32_enabled()
    torch.set_float32_matmul_precision("highest")
    assert not cuda_standin.allow_tf32 and standin_state.compute_type["float32"] == 1
    torch.backends.cuda.matmul.allow_tf32 = True
    assert standin_state.compute_type["float32"] == 7
    cu.set_allow_tf32(False)
    assert torch.backends.cuda.matmul.allow_tf32 is False and standin_state.compute_type["float32"] == 1
    assert torch.get_float32_matmul_precision() == "highest"
