"""Creation functions (SPEC §1), legacy constructors, conversions to Python/NumPy, dtype conversion,
and repr/str laid out as PyTorch's (expected strings checked against PyTorch 2.13)."""
import math

import numpy as np
import pytest

import tensorplug as torch


# -- tensor() and dtype inference ---------------------------------------------------------------------
@pytest.mark.parametrize("data,dtype", [
    ([1.0, 2.0], torch.float32),
    (1.5, torch.float32),
    ([1, 2], torch.int64),
    (3, torch.int64),
    ([True, False], torch.bool),
    ([1, 2.5], torch.float32),
    ([True, 1], torch.int64),
    ([], torch.float32),
    (np.array([1.0, 2.0]), torch.float64),
    (np.array([1, 2], dtype=np.int32), torch.int32),
    (np.array([1, 2], dtype=np.uint8), torch.uint8),
    (np.array([1.0], dtype=np.float16), torch.float16),
    (np.array([True]), torch.bool),
    (np.float64(2.0), torch.float64),
    (np.int16(2), torch.int16),
])
def test_tensor_dtype_inference(data, dtype):
    """Python floats -> float32, ints -> int64, bools -> bool; NumPy data keeps its dtype."""
    assert torch.tensor(data).dtype is dtype


def test_tensor_shapes_and_values():
    """Nested sequences give the shape; values round-trip through tolist."""
    x = torch.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.shape == (2, 3) and x.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert torch.tensor(5.0).shape == () and torch.tensor(5.0).ndim == 0
    assert torch.tensor([]).shape == (0,)
    assert torch.tensor([[1.0]], dtype=torch.float64).dtype is torch.float64
    assert torch.tensor([1.7, -1.7], dtype=torch.int64).tolist() == [1, -1]


def test_tensor_copies_its_data():
    """tensor() never shares memory with a NumPy array or another tensor."""
    a = np.zeros(3)
    t = torch.tensor(a)
    a[0] = 7
    assert t.tolist() == [0.0, 0.0, 0.0]
    u = torch.tensor(t)
    t.add_(1)
    assert u.tolist() == [0.0, 0.0, 0.0]


def test_tensor_errors():
    """Ragged nesting, strings and out-of-int64 ints are refused with PyTorch's messages."""
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        torch.tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 2 \(got 1\)"):
        torch.tensor([[[1, 2]], [[1]]])
    with pytest.raises((TypeError, ValueError)):
        torch.tensor(["a", "b"])
    with pytest.raises(ValueError, match="Overflow"):
        torch.tensor([2**63])
    with pytest.raises(ValueError, match="Overflow"):
        torch.tensor(-2**63 - 1)
    assert torch.tensor(2**63, dtype=torch.float64).item() == 2.0**63
    assert torch.tensor([2**63 - 1]).item() == 2**63 - 1


def test_requires_grad_at_creation():
    """requires_grad=True on floating tensors; integer tensors cannot require grad."""
    assert torch.tensor([1.0], requires_grad=True).requires_grad
    assert torch.zeros(2, requires_grad=True).is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1], requires_grad=True)


# -- from_numpy ----------------------------------------------------------------------------------------
def test_from_numpy_shares_memory_both_ways():
    """Writes through the array show in the tensor and in-place ops on the tensor show in the array."""
    a = np.arange(4.0)
    t = torch.from_numpy(a)
    assert t.dtype is torch.float64
    a[0] = 100.0
    assert t.tolist()[0] == 100.0
    t.add_(1)
    assert a.tolist() == [101.0, 2.0, 3.0, 4.0]
    assert t.numpy() is a or np.shares_memory(t.numpy(), a)
    t.numpy()[3] = -1
    assert t.tolist()[3] == -1


@pytest.mark.parametrize("np_dtype,dtype", [
    (np.float16, torch.float16), (np.float32, torch.float32), (np.float64, torch.float64),
    (np.int8, torch.int8), (np.int16, torch.int16), (np.int32, torch.int32), (np.int64, torch.int64),
    (np.uint8, torch.uint8), (np.bool_, torch.bool)])
def test_from_numpy_dtypes(np_dtype, dtype):
    """Every supported NumPy dtype maps to its tensorplug dtype."""
    assert torch.from_numpy(np.zeros(2, dtype=np_dtype)).dtype is dtype


def test_from_numpy_refuses_other_dtypes():
    """uint16, uint32 and non-arrays are refused (complex64 / complex128 are supported: tests/ops/test_complex.py)."""
    with pytest.raises(TypeError, match="uint16"):
        torch.from_numpy(np.zeros(2, dtype=np.uint16))
    with pytest.raises(TypeError):
        torch.from_numpy(np.zeros(2, dtype=np.uint32))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        torch.from_numpy([1, 2])


def test_numpy_shares_memory_with_tensor():
    """x.numpy() of a CPU tensor is a view of its data; requires_grad tensors need detach()."""
    x = torch.zeros(3)
    a = x.numpy()
    a[1] = 5
    assert x.tolist() == [0.0, 5.0, 0.0] and a.dtype == np.float32
    y = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        y.numpy()
    assert y.detach().numpy().tolist() == [1.0, 1.0]


# -- filled tensors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,value", [(torch.zeros, 0), (torch.ones, 1)])
def test_zeros_ones(fn, value):
    """Sizes as varargs, a tuple, a list or a Size; dtype and requires_grad keywords."""
    for t in (fn(2, 3), fn((2, 3)), fn([2, 3]), fn(torch.Size([2, 3]))):
        assert t.shape == (2, 3) and t.dtype is torch.float32
        assert t.tolist() == [[value] * 3] * 2
    assert fn(3, dtype=torch.int32).dtype is torch.int32
    assert fn(()).shape == () and fn(0).shape == (0,)
    assert fn(2, requires_grad=True).requires_grad


def test_size_errors():
    """Negative or non-integer sizes are refused."""
    with pytest.raises(RuntimeError, match="negative dimension"):
        torch.zeros(2, -1)
    with pytest.raises(TypeError):
        torch.zeros(2.5)


@pytest.mark.parametrize("value,dtype", [(2, torch.int64), (2.5, torch.float32), (True, torch.bool)])
def test_full_infers_dtype_from_fill_value(value, dtype):
    """full() takes its dtype from the fill value, like PyTorch."""
    t = torch.full((2, 2), value)
    assert t.dtype is dtype and t.tolist() == [[value, value], [value, value]]


def test_full_with_dtype_and_like():
    """full(dtype=...), full_like, zeros_like, ones_like, empty_like keep shape/dtype/device."""
    assert torch.full((2,), 1.5, dtype=torch.float64).tolist() == [1.5, 1.5]
    assert torch.full((2,), 7, dtype=torch.float32).dtype is torch.float32
    base = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    for t in (torch.zeros_like(base), torch.ones_like(base), torch.empty_like(base), torch.full_like(base, 9)):
        assert t.shape == (2, 2) and t.dtype is torch.int32 and t.device == base.device
    assert torch.full_like(base, 2.7).tolist() == [[2, 2], [2, 2]]
    assert torch.ones_like(base, dtype=torch.float64).dtype is torch.float64
    assert torch.zeros_like(torch.ones(2)).tolist() == [0.0, 0.0]


def test_empty():
    """empty() gives the requested shape and dtype (the contents are unspecified)."""
    t = torch.empty(2, 3)
    assert t.shape == (2, 3) and t.dtype is torch.float32
    assert torch.empty(4, dtype=torch.int8).dtype is torch.int8


def test_eye():
    """eye(n), eye(n, m), with dtype."""
    assert torch.eye(3).tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert torch.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert torch.eye(2).dtype is torch.float32
    assert torch.eye(2, dtype=torch.int64).dtype is torch.int64


# -- ranges ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,expected,dtype", [
    ((5,), [0, 1, 2, 3, 4], torch.int64),
    ((1, 4), [1, 2, 3], torch.int64),
    ((0, 10, 3), [0, 3, 6, 9], torch.int64),
    ((10, 0, -3), [10, 7, 4, 1], torch.int64),
    ((0, -5, -1), [0, -1, -2, -3, -4], torch.int64),
    ((0, 0), [], torch.int64),
    ((1, 2.5, 0.5), [1.0, 1.5, 2.0], torch.float32),
    ((0.5, 3), [0.5, 1.5, 2.5], torch.float32),
    ((5.0,), [0.0, 1.0, 2.0, 3.0, 4.0], torch.float32),
])
def test_arange_values_and_dtype(args, expected, dtype):
    """Integer arguments give int64, any float argument gives the default float dtype."""
    t = torch.arange(*args)
    assert t.dtype is dtype
    assert t.tolist() == pytest.approx(expected)


@pytest.mark.parametrize("args,length", [
    ((0, 1, 0.1), 10), ((0, 1.0000001, 0.1), 11), ((0.1, 0.9, 0.2), 4), ((-1, 1, 0.3), 7),
    ((0, 1e6), 1000000), ((1, 10, 2.5), 4), ((0, 2, 0.2), 10),
])
def test_arange_length_is_exact(args, length):
    """The length is ceil((end - start) / step) computed in double, as in PyTorch."""
    assert torch.arange(*args).shape == (length,)


def test_arange_dtype_and_errors():
    """dtype= is honoured; a zero step or a step of the wrong sign is an error."""
    assert torch.arange(5, dtype=torch.float64).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert torch.arange(5, dtype=torch.float64).dtype is torch.float64
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(5, 1)


def test_linspace():
    """linspace includes both ends; steps=1 gives start; steps=0 gives an empty tensor."""
    assert torch.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert torch.linspace(0, 1, 5).dtype is torch.float32
    assert torch.linspace(-1, 1, 1).tolist() == [-1.0]
    assert torch.linspace(0, 10, 0).shape == (0,)
    assert torch.linspace(0, 1, 3, dtype=torch.float64).dtype is torch.float64
    with pytest.raises(RuntimeError):
        torch.linspace(0, 1, -1)


# -- legacy constructors (seed 000 / 004 spelling) ------------------------------------------------------
def test_legacy_constructor_with_sizes():
    """FloatTensor(5, 7, 3) is a float32 tensor of that shape."""
    x = torch.FloatTensor(5, 7, 3)
    assert x.size() == (5, 7, 3) and x.dtype is torch.float32
    assert torch.FloatTensor(5, 1, 4, 1).shape == (5, 1, 4, 1)
    assert torch.IntTensor(2, 2).dtype is torch.int32
    assert torch.LongTensor(torch.Size([2, 3])).shape == (2, 3)
    assert torch.FloatTensor().shape == (0,)


@pytest.mark.parametrize("cls,dtype,data,expected", [
    (torch.LongTensor, torch.int64, [0, 2, 4], [0, 2, 4]),
    (torch.DoubleTensor, torch.float64, [1, 2], [1.0, 2.0]),
    (torch.ByteTensor, torch.uint8, [1, 2], [1, 2]),
    (torch.IntTensor, torch.int32, [[1], [2]], [[1], [2]]),
    (torch.FloatTensor, torch.float32, [1.5], [1.5]),
    (torch.HalfTensor, torch.float16, [0.5], [0.5]),
    (torch.ShortTensor, torch.int16, [3], [3]),
    (torch.CharTensor, torch.int8, [-3], [-3]),
    (torch.BoolTensor, torch.bool, [True], [True]),
])
def test_legacy_constructor_with_data(cls, dtype, data, expected):
    """LongTensor([0, 2, 4]) etc. copy the data into the class's dtype."""
    x = cls(data)
    assert x.dtype is dtype and x.tolist() == expected
    assert isinstance(x, cls) and isinstance(x, torch.Tensor)


def test_tensor_constructor():
    """Tensor(2, 3) is a float32 tensor of that shape; Tensor([1, 2]) holds float data."""
    assert torch.Tensor(2, 3).shape == (2, 3) and torch.Tensor(2, 3).dtype is torch.float32
    t = torch.Tensor([1, 2])
    assert t.dtype is torch.float32 and t.tolist() == [1.0, 2.0]
    assert isinstance(t, torch.Tensor)


def test_isinstance_with_legacy_classes():
    """isinstance(x, torch.FloatTensor) checks the dtype, like PyTorch."""
    assert isinstance(torch.tensor([1.0]), torch.FloatTensor)
    assert not isinstance(torch.tensor([1]), torch.FloatTensor)
    assert isinstance(torch.tensor([1]), torch.LongTensor)
    assert isinstance(torch.tensor([1.0], dtype=torch.float64), torch.DoubleTensor)
    assert not isinstance([1.0], torch.FloatTensor)


def test_legacy_type_names():
    """x.type() is the legacy type name; x.type(T) converts."""
    assert torch.tensor([1.0]).type() == "tensorplug.FloatTensor"
    assert torch.tensor([1]).type() == "tensorplug.LongTensor"
    assert torch.tensor([1.5]).type(torch.DoubleTensor).dtype is torch.float64
    assert torch.tensor([1.5]).type("torch.IntTensor").tolist() == [1]
    assert torch.tensor([1.5]).type(torch.int16).dtype is torch.int16


# -- conversions -------------------------------------------------------------------------------------------
def test_item_tolist_numpy():
    """item() gives a Python number; tolist() nested lists; numpy() an ndarray of the same dtype."""
    assert torch.tensor(2.5).item() == 2.5 and isinstance(torch.tensor(2.5).item(), float)
    assert torch.tensor(3).item() == 3 and isinstance(torch.tensor(3).item(), int)
    assert torch.tensor([True]).item() is True
    assert torch.tensor([[7]]).item() == 7
    with pytest.raises(RuntimeError, match="2 elements"):
        torch.tensor([1, 2]).item()
    assert torch.tensor([[1.0, 2.0]]).tolist() == [[1.0, 2.0]]
    assert torch.tensor(1.5).tolist() == 1.5
    assert torch.tensor([1.0], dtype=torch.float64).numpy().dtype == np.float64
    assert float(torch.tensor([2.5])) == 2.5 and int(torch.tensor(3)) == 3


def test_shape_is_size():
    """x.shape == x.size(); size(dim) accepts negative dims; a Size prints like PyTorch's."""
    x = torch.zeros(2, 3, 4)
    assert x.shape == x.size() == (2, 3, 4)
    assert isinstance(x.shape, torch.Size)
    assert x.size(1) == 3 and x.size(-1) == 4
    assert repr(x.shape) == "tensorplug.Size([2, 3, 4])"
    assert x.numel() == 24 and x.dim() == x.ndim == 3
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)


@pytest.mark.parametrize("method,dtype", [
    ("double", torch.float64), ("float", torch.float32), ("half", torch.float16), ("long", torch.int64),
    ("int", torch.int32), ("short", torch.int16), ("char", torch.int8), ("byte", torch.uint8),
    ("bool", torch.bool)])
def test_conversion_methods(method, dtype):
    """.double(), .long() etc. convert the dtype (floats truncate toward zero)."""
    x = getattr(torch.tensor([1.7, -0.0, 2.2]), method)()
    assert x.dtype is dtype
    if not dtype.is_floating_point and dtype is not torch.bool:
        assert x.tolist()[0] == 1


def test_to_dtype():
    """.to(dtype) converts and returns self when nothing changes; copy=True always copies."""
    x = torch.tensor([1.5, -2.5])
    assert x.to(torch.int32).tolist() == [1, -2]
    assert x.to(torch.float32) is x
    assert x.to(torch.float32, copy=True) is not x
    assert x.to(dtype=torch.float64).dtype is torch.float64
    assert x.to(torch.tensor([1], dtype=torch.int16)).dtype is torch.int16
    assert x.to("cpu", torch.float64).dtype is torch.float64
    assert torch.tensor([1, 0]).bool().tolist() == [True, False]
    assert torch.tensor([300]).to(torch.float16).item() == 300.0


def test_clone_and_new_methods():
    """clone copies; new_* make tensors with the source's dtype and device."""
    x = torch.tensor([1, 2], dtype=torch.int32)
    c = x.clone()
    c.add_(1)
    assert x.tolist() == [1, 2]
    assert x.new_zeros(3).dtype is torch.int32 and x.new_ones((2, 2)).shape == (2, 2)
    assert x.new_full((2,), 5).tolist() == [5, 5] and x.new_tensor([7]).dtype is torch.int32


def test_as_tensor_shares_when_it_can():
    """as_tensor shares memory with a matching NumPy array and returns tensors unchanged."""
    a = np.zeros(2, dtype=np.float32)
    t = torch.as_tensor(a)
    a[0] = 3
    assert t.tolist()[0] == 3
    assert torch.as_tensor(t) is t
    assert torch.as_tensor([1, 2]).dtype is torch.int64


# -- repr ---------------------------------------------------------------------------------------------------
# Every expected string is what PyTorch 2.13 prints, with "torch." spelled "tensorplug.".
REPRS = [
    (lambda: torch.tensor([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
    (lambda: torch.tensor([1, 2]), "tensor([1, 2])"),
    (lambda: torch.tensor([1.0, 2.0], dtype=torch.float64), "tensor([1., 2.], dtype=tensorplug.float64)"),
    (lambda: torch.tensor(5.0), "tensor(5.)"),
    (lambda: torch.tensor(5), "tensor(5)"),
    (lambda: torch.tensor(True), "tensor(True)"),
    (lambda: torch.tensor([True, False]), "tensor([ True, False])"),
    (lambda: torch.tensor([1.5, 2.25]), "tensor([1.5000, 2.2500])"),
    (lambda: torch.tensor([-1.5, 2.0]), "tensor([-1.5000,  2.0000])"),
    (lambda: torch.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda: torch.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: torch.tensor([123456.0, 1.0]), "tensor([1.2346e+05, 1.0000e+00])"),
    (lambda: torch.tensor([100000000.0]), "tensor([100000000.])"),
    (lambda: torch.tensor([1e8, 1.5]), "tensor([1.0000e+08, 1.5000e+00])"),
    (lambda: torch.tensor([1000.5, 1.5]), "tensor([1000.5000,    1.5000])"),
    (lambda: torch.tensor([float("nan"), 1.0]), "tensor([nan, 1.])"),
    (lambda: torch.tensor([float("inf"), -float("inf"), 1.5]), "tensor([   inf,   -inf, 1.5000])"),
    (lambda: torch.tensor(1e-10), "tensor(1.0000e-10)"),
    (lambda: torch.tensor(3.14159), "tensor(3.1416)"),
    (lambda: torch.tensor(-0.0), "tensor(-0.)"),
    (lambda: torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
    (lambda: torch.tensor([[-1, 2], [3, 40]]), "tensor([[-1,  2],\n        [ 3, 40]])"),
    (lambda: torch.tensor([-5, 10, 300]), "tensor([ -5,  10, 300])"),
    (lambda: torch.zeros(2, 2, 2),
     "tensor([[[0., 0.],\n         [0., 0.]],\n\n        [[0., 0.],\n         [0., 0.]]])"),
    (lambda: torch.zeros(0), "tensor([])"),
    (lambda: torch.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: torch.zeros(0, dtype=torch.int64), "tensor([], dtype=tensorplug.int64)"),
    (lambda: torch.zeros(0, dtype=torch.bool), "tensor([], dtype=tensorplug.bool)"),
    (lambda: torch.zeros(3, dtype=torch.int32), "tensor([0, 0, 0], dtype=tensorplug.int32)"),
    (lambda: torch.zeros(2, dtype=torch.uint8), "tensor([0, 0], dtype=tensorplug.uint8)"),
    (lambda: torch.tensor([1.5, 2.0], dtype=torch.float16), "tensor([1.5000, 2.0000], dtype=tensorplug.float16)"),
    (lambda: torch.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True),
     "tensor([1., 2.], dtype=tensorplug.float64, requires_grad=True)"),
    (lambda: torch.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    (lambda: torch.arange(2000.0),
     "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"),
    (lambda: torch.arange(10.0) / 3,
     "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n        3.0000])"),
]


@pytest.mark.parametrize("make,expected", REPRS)
def test_repr_matches_pytorch(make, expected):
    """repr and str lay tensors out exactly as PyTorch does."""
    t = make()
    assert repr(t) == expected
    assert str(t) == expected


def test_format_of_zero_dim_tensors_is_their_value():
    assert f"{torch.tensor(3)}" == "3" and f"{torch.tensor(2.5):>8.2f}" == "    2.50"
    assert f"{torch.tensor([1, 2])}" == "tensor([1, 2])"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{torch.tensor([1.0, 2.0]):.2f}"


def test_repr_grad_fn_suffix():
    """A computed tensor shows its grad_fn."""
    y = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    assert repr(y) == f"tensor([2., 4.], grad_fn=<{y.grad_fn.name()}>)"
    assert y.grad_fn.name() == "MulBackward0"


def test_repr_summarizes_large_matrices():
    """Past 1000 elements rows and columns are elided with '...', as PyTorch does."""
    x = torch.arange(1200).reshape(20, 60)
    lines = repr(x).splitlines()
    assert lines[0] == "tensor([[   0,    1,    2,  ...,   57,   58,   59],"
    assert lines[3] == "        ...,"
    assert lines[-1] == "        [1140, 1141, 1142,  ..., 1197, 1198, 1199]])"


def test_set_printoptions():
    """precision, threshold, sci_mode and profiles behave as in PyTorch."""
    try:
        torch.set_printoptions(precision=2)
        assert repr(torch.tensor([1.12345, 3.0])) == "tensor([1.12, 3.00])"
        torch.set_printoptions(threshold=5)
        assert repr(torch.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
        torch.set_printoptions(sci_mode=True)            # precision 2 still holds
        assert repr(torch.tensor([1.5, 2.0])) == "tensor([1.50e+00, 2.00e+00])"
    finally:
        torch.set_printoptions(profile="default")
    assert repr(torch.tensor([1.12345])) == "tensor([1.1235])"


def test_repr_default_dtype_follows_set_default_dtype():
    """With float64 as default dtype, float64 tensors print without a dtype and float32 with one."""
    try:
        torch.set_default_dtype(torch.float64)
        assert repr(torch.tensor([1.5])) == "tensor([1.5000])"
        assert repr(torch.tensor([1.5], dtype=torch.float32)) == "tensor([1.5000], dtype=tensorplug.float32)"
    finally:
        torch.set_default_dtype(torch.float32)


def test_format_of_scalars():
    """f-strings with a format spec format a one-element tensor's value."""
    assert f"{torch.tensor(math.pi):.3f}" == "3.142"


@pytest.mark.parametrize("make, want", [
    (lambda out: torch.zeros(2, 3, out=out), np.zeros((2, 3))),
    (lambda out: torch.ones(4, out=out), np.ones(4)),
    (lambda out: torch.full((3,), 2.5, out=out), np.full(3, 2.5)),
])
def test_creation_out_is_resized_and_written(make, want):
    """out= (was silently ignored by full/zeros/ones): out resized to the result and overwritten, its dtype
    kept when no dtype is given, and it is the returned tensor."""
    out = torch.full((1,), -7.0, dtype=torch.float64)
    r = make(out)
    assert r is out and out.dtype == torch.float64
    np.testing.assert_array_equal(out.numpy(), want)


def test_rand_and_randn_write_into_out():
    out = torch.empty(1, dtype=torch.float64)
    torch.manual_seed(3)
    r = torch.randn(2, 3, out=out)
    torch.manual_seed(3)
    want = torch.randn(2, 3, dtype=torch.float64)
    assert r is out and out.shape == (2, 3)
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    u = torch.rand(5, out=torch.empty(0))
    assert u.shape == (5,) and bool(((u >= 0) & (u < 1)).all())
    with pytest.raises(TypeError, match="out= must be a Tensor"):
        torch.zeros(2, out=[0, 0])
