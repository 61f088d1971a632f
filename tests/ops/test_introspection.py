"""finfo / iinfo, can_cast, is_tensor, numel, is_floating_point, is_complex, is_nonzero, and the
layout methods stride / storage_offset / get_device, against NumPy and PyTorch's documented values."""
import numpy as np
import pytest

import tensorplug as torch


@pytest.mark.parametrize("dt", [torch.float16, torch.float32, torch.float64])
def test_finfo_matches_numpy(dt):
    f, n = torch.finfo(dt), np.finfo(dt.name)
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal) == (
        n.bits, float(n.eps), float(n.max), float(n.min), float(n.smallest_normal), float(n.smallest_normal))
    assert f.resolution == 10.0 ** -n.precision and f.dtype == dt.name
    assert torch.finfo(dt) == torch.finfo(dt) and torch.finfo(dt) != torch.finfo(torch.float64 if dt is not
                                                                                 torch.float64 else torch.float32)
    assert repr(torch.finfo(torch.float32)) == ("finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, "
                                                "eps=1.19209e-07, smallest_normal=1.17549e-38, tiny=1.17549e-38, "
                                                "dtype=float32)")


def test_finfo_default_and_errors():
    assert torch.finfo().dtype == "float32"
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.finfo().eps == 2.0 ** -52
    finally:
        torch.set_default_dtype(torch.float32)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        torch.finfo(torch.int32)
    with pytest.raises(TypeError, match="must be tensorplug.dtype"):
        torch.finfo("float32")


@pytest.mark.parametrize("dt", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_iinfo_matches_numpy(dt):
    i, n = torch.iinfo(dt), np.iinfo(dt.name)
    assert (i.bits, i.min, i.max, i.dtype) == (n.bits, int(n.min), int(n.max), dt.name)
    assert repr(torch.iinfo(torch.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"


def test_iinfo_errors():
    with pytest.raises(TypeError, match="requires an integer input type"):
        torch.iinfo(torch.float32)
    with pytest.raises(TypeError, match="bool is not supported"):
        torch.iinfo(torch.bool)


def test_can_cast_follows_the_category_order():
    cats = [torch.bool, torch.uint8, torch.int8, torch.int64, torch.float16, torch.float64]
    level = {torch.bool: 0, torch.uint8: 1, torch.int8: 1, torch.int64: 1, torch.float16: 2, torch.float64: 2}
    for a in cats:
        for b in cats:
            assert torch.can_cast(a, b) == (level[a] <= level[b]), (a, b)
    with pytest.raises(TypeError):
        torch.can_cast(torch.float32, "int32")


def test_predicates():
    x = torch.ones(2, 3)
    assert torch.is_tensor(x) and not torch.is_tensor(np.ones(2)) and not torch.is_tensor(3)
    assert torch.numel(x) == 6 and torch.numel(torch.tensor(1.0)) == 1
    assert torch.is_floating_point(x) and not torch.is_floating_point(torch.tensor([1]))
    assert not torch.is_complex(x) and not x.is_complex()
    assert x.is_signed() and not torch.tensor([1], dtype=torch.uint8).is_signed()
    assert torch.is_nonzero(torch.tensor([2.0])) and not torch.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        torch.is_nonzero(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        torch.is_nonzero(torch.tensor([]))
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.numel([1, 2])


def test_stride_and_storage_offset_of_views():
    x = torch.arange(24.0).reshape(2, 3, 4)
    assert x.stride() == (12, 4, 1) and x.stride(-1) == 1 and x.stride(0) == 12
    assert x.transpose(0, 2).stride() == (1, 4, 12)
    assert x[:, 1].stride() == (12, 1) and x[:, 1].storage_offset() == 4
    assert x[1, 2, 3:].storage_offset() == 23 and x.storage_offset() == 0
    assert x[:, ::2].stride() == (12, 8, 1)
    assert torch.ones(3).expand(2, 3).stride() == (0, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.stride(3)
    assert x.get_device() == -1


def test_storage_offset_of_a_loaded_view_and_of_from_numpy_views(tmp_path):
    """storage_offset() is read from memory, so views without autograd view records report it too."""
    import numpy as np
    import tensorplug as tp
    base = np.arange(10.0)
    assert tp.from_numpy(base[3:]).storage_offset() == 3
    b = tp.arange(10.0)
    tp.save({"a": b[2:7], "b": b[5:]}, tmp_path / "v.pt")
    d = tp.load(tmp_path / "v.pt")
    assert (d["a"].storage_offset(), d["b"].storage_offset()) == (2, 5)
    assert b[2:7].storage_offset() == 2 and b.t().storage_offset() == 0
