"""A non-Tensor where a public function needs a Tensor gives PyTorch's TypeError naming the function,
the argument and the type; never an AttributeError or a raw NumPy error."""
import pytest

import tensorplug as torch
import tensorplug.nn.functional as F
from tensorplug.ops import (indexing, introspection, linalg, numerical, pointwise, reduction, shape,
                            special)

_FAMILIES = (pointwise, reduction, shape, indexing, linalg, special, numerical, introspection)


def test_pytorchs_message():
    with pytest.raises(TypeError, match=r"^sin\(\): argument 'input' \(position 1\) must be Tensor, not str$"):
        torch.sin("abc")
    with pytest.raises(TypeError, match=r"^reshape\(\): argument 'input' \(position 1\) must be Tensor, not "
                                        r"NoneType$"):
        torch.reshape(None, (1,))
    with pytest.raises(TypeError, match=r"relu\(\): argument 'input'.* must be Tensor, not list"):
        F.relu([1.0, 2.0])
    with pytest.raises(TypeError, match="clamp\\(\\): argument 'min' must be Number or Tensor, not str"):
        torch.clamp(torch.ones(2), "x")
    with pytest.raises(TypeError, match="expected Tensor as element 0"):
        torch.broadcast_tensors([1, 2])


def test_an_attribute_error_from_elsewhere_passes_through():
    from tensorplug.ops._argcheck import tensor_typed

    def op(x):
        return x.no_such_attribute          # a bug inside an op, with a Tensor argument
    with pytest.raises(AttributeError, match="no_such_attribute"):
        tensor_typed(op)(torch.ones(1))


@pytest.mark.parametrize("bad", ["abc", None, [1, 2]], ids=["str", "None", "list"])
def test_no_public_function_leaks_attribute_or_numpy_errors(bad):
    """Every public function, called with a non-Tensor first argument, raises one of PyTorch's error
    types (some accept numbers or lists there, and then succeed or complain about the value)."""
    names = [n for m in _FAMILIES for n in m.PUBLIC] + list(F.__all__)
    for name in names:
        fn = getattr(torch, name, None) or getattr(F, name)
        if not callable(fn) or isinstance(fn, type):
            continue
        try:
            fn(bad)
        except (TypeError, RuntimeError, ValueError, IndexError, NotImplementedError) as e:
            assert "object has no attribute" not in str(e) and "ufunc" not in str(e), (name, e)
        except Exception as e:      # noqa: BLE001 - anything else is the bug this test is for
            pytest.fail(f"{name}({bad!r}) raised {type(e).__name__}: {e}")
