"""The `size=` keyword of the creation and sampling functions, as PyTorch accepts it, and PyTorch's
TypeErrors for a size given both ways or of the wrong type."""
import numpy as np
import pytest

import tensorplug as torch


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword(name):
    fn = getattr(torch, name)
    for size in ((2, 3), [4], torch.Size([2, 1, 2]), ()):
        t = fn(size=size)
        assert tuple(t.shape) == tuple(size) and t.dtype is torch.float32
    assert fn(size=(2, 2), dtype=torch.float64).dtype is torch.float64
    if name in ("zeros", "ones"):
        np.testing.assert_array_equal(fn(size=(2, 3)).numpy(), getattr(np, name)((2, 3)))


def test_full_and_randint_by_keyword():
    np.testing.assert_array_equal(torch.full(size=(2,), fill_value=3.0).numpy(), [3.0, 3.0])
    assert torch.full(size=(2,), fill_value=1, dtype=torch.int32).dtype is torch.int32
    for t, lo, hi in ((torch.randint(0, 5, size=(30,)), 0, 5), (torch.randint(5, size=(30,)), 0, 5),
                      (torch.randint(low=2, high=4, size=(30,)), 2, 4), (torch.randint(high=3, size=(30,)), 0, 3),
                      (torch.randint(3, (30,)), 0, 3)):
        v = t.numpy()
        assert t.shape == (30,) and t.dtype is torch.int64 and v.min() >= lo and v.max() < hi


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_size_given_twice(name):
    fn = getattr(torch, name)
    for args in ((2,), ((2,),), (2, 3)):
        with pytest.raises(TypeError, match=f"^{name}\\(\\) got multiple values for argument 'size'$"):
            fn(*args, size=(2, 3))
    with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
        torch.full((2,), 1.0, size=(2,))


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_sampling_size_given_twice(name):
    with pytest.raises(TypeError, match=f"^{name}\\(\\) received an invalid combination of arguments - got "
                                        "\\(int, size=tuple\\), but expected one of:"):
        getattr(torch, name)(2, size=(2,))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword_type(name):
    fn = getattr(torch, name)
    for bad, kind in ((2, "int"), (None, "NoneType")):
        with pytest.raises(TypeError, match=f"^{name}\\(\\): argument 'size' must be tuple of ints, not {kind}$"):
            fn(size=bad)


def test_randint_errors():
    """randint without a size, or with a size that is not a tuple, is PyTorch's TypeError."""
    with pytest.raises(TypeError, match="^randint\\(\\): argument 'size' \\(position 2\\) must be tuple of ints, "
                                        "not int$"):
        torch.randint(0, 5)
    with pytest.raises(TypeError, match="^randint\\(\\) received an invalid combination of arguments - got "
                                        "\\(int\\), but expected one of:"):
        torch.randint(5)
    with pytest.raises(TypeError, match="argument 'size' must be tuple of ints, not int"):
        torch.randint(0, 5, 3)
    with pytest.raises(TypeError):
        torch.randint(0, 5, (2,), size=(2,))


def test_new_factories_take_size():
    """x.new_zeros / new_ones / new_empty / new_full take size= too, keeping x's dtype."""
    x = torch.ones(1, dtype=torch.float64)
    for name in ("new_zeros", "new_ones", "new_empty"):
        t = getattr(x, name)(size=(2, 3))
        assert tuple(t.shape) == (2, 3) and t.dtype is torch.float64
        with pytest.raises(TypeError, match=f"^{name}\\(\\) got multiple values for argument 'size'$"):
            getattr(x, name)(2, size=(2,))
    np.testing.assert_array_equal(x.new_ones(size=(2,)).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(x.new_full(size=(2,), fill_value=4.0).numpy(), [4.0, 4.0])
