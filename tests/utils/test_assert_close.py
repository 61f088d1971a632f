"""tensorplug.testing.assert_close: PyTorch's rules and messages (texts as PyTorch 2.13 prints them,
with tensorplug's names for Size and dtypes)."""
import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.testing import assert_close

T = tp.tensor


def _msg(fn, exc=AssertionError):
    with pytest.raises(exc) as e:
        fn()
    return str(e.value)


def test_close_values_pass():
    assert_close(T([1.0, 2.0]), T([1.0, 2.0 + 1e-6]))          # within float32's 1.3e-6 * 2 + 1e-5
    assert_close(T([1.0, math.inf]), T([1.0, math.inf]))
    assert_close(T([math.nan]), T([math.nan]), equal_nan=True)
    assert_close(tp.zeros(0), tp.zeros(0))
    assert_close(T([1.0, 2.0], requires_grad=True), T([1.0, 2.0]))
    assert_close((1, 2), [1, 2])
    assert_close(None, None)
    assert_close(T([1.0, 2.0]), T([1.0, 2.0], dtype=tp.float64), check_dtype=False)
    assert_close(T([1.0]), T([1]), check_dtype=False)


def test_tensor_mismatch_message():
    assert _msg(lambda: assert_close(T([1., 2., 3.]), T([1., 2.5, 3.]))) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)")


def test_greatest_differences_are_among_the_mismatched_elements():
    """A matching element with a larger absolute difference is not the one reported."""
    m = _msg(lambda: assert_close(T([1e6, 1.0], dtype=tp.float64), T([1e6 + 1, 1.001], dtype=tp.float64),
                                  rtol=1.3e-6, atol=1e-5))
    assert m == ("Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
                 "Greatest absolute difference: 0.0009999999999998899 at index (1,) (up to 1e-05 allowed)\n"
                 "Greatest relative difference: 0.000999000999000889 at index (1,) (up to 1.3e-06 allowed)")


def test_integer_and_bool_tensors_must_be_equal():
    assert _msg(lambda: assert_close(T([[1, 2], [3, 4]]), T([[1, 2], [3, 5]]))) == (
        "Tensor-likes are not equal!\n\nMismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 1 at index (1, 1)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1, 1)")
    assert _msg(lambda: assert_close(T([True, False]), T([True, True]))) == (
        "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
        "Greatest absolute difference: 1 at index (1,)\nGreatest relative difference: 1.0 at index (1,)")
    assert _msg(lambda: assert_close(T(True), T(False))) == (
        "Scalars are not equal!\n\nExpected False but got True.\nAbsolute difference: 1\nRelative difference: inf")


def test_nan_inf_and_zero_expected():
    assert "Greatest absolute difference: nan at index (0,)" in _msg(lambda: assert_close(T([math.nan]), T([math.nan])))
    assert "Greatest relative difference: inf at index (1,)" in _msg(lambda: assert_close(T([1., 2.]), T([1., 0.])))


def test_attribute_mismatches():
    assert _msg(lambda: assert_close(T([1., 2.]), T([1., 2., 3.]))) == (
        "The values for attribute 'shape' do not match: tensorplug.Size([2]) != tensorplug.Size([3]).")
    assert _msg(lambda: assert_close(T([1., 2.]), T([1., 2.], dtype=tp.float64))) == (
        "The values for attribute 'dtype' do not match: tensorplug.float32 != tensorplug.float64.")


def test_scalars_and_containers():
    assert _msg(lambda: assert_close(1.0, 1.1)) == (
        "Scalars are not close!\n\nExpected 1.1 but got 1.0.\nAbsolute difference: 0.10000000000000009 (up to 1e-07 "
        "allowed)\nRelative difference: 0.09090909090909098 (up to 1e-07 allowed)")
    assert _msg(lambda: assert_close(1, 1.0)) == "The (d)types do not match: <class 'int'> != <class 'float'>."
    assert _msg(lambda: assert_close([T(1.)], [T(2.)])).endswith("\n\nThe failure occurred for item [0]")
    assert _msg(lambda: assert_close({"a": T(1.)}, {"a": T(1.5)})) == (
        "Scalars are not close!\n\nExpected 1.5 but got 1.0.\nAbsolute difference: 0.5 (up to 1e-05 allowed)\n"
        "Relative difference: 0.3333333333333333 (up to 1.3e-06 allowed)\n\nThe failure occurred for item ['a']")
    assert _msg(lambda: assert_close([1, 2], [1, 2, 3])) == "The length of the sequences mismatch: 2 != 3"
    assert _msg(lambda: assert_close({"a": 1}, {"b": 1})) == (
        "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
        "Additional keys in the actual mapping: ['a']")
    assert _msg(lambda: assert_close(None, 1)) == "None mismatch: None is not 1"
    assert _msg(lambda: assert_close([[T(1.)], {"k": (1, 2.0)}], [[T(1.)], {"k": (1, 2.5)}])).endswith(
        "The failure occurred for item [1]['k'][1]")


def test_numpy_arrays_and_unpaired_types():
    assert "(up to 1e-07 allowed)" in _msg(lambda: assert_close(np.array([1., 2.]), np.array([1., 2.5])))
    assert _msg(lambda: assert_close(T([1., 2.]), np.array([1., 2.])), TypeError) == (
        f"No comparison pair was able to handle inputs of type {type(T(1.))!r} and <class 'numpy.ndarray'>.")
    assert _msg(lambda: assert_close(T(1.), 1.0), TypeError).startswith("No comparison pair")


def test_tolerances_msg_and_argument_errors():
    assert _msg(lambda: assert_close(T([1., 2.]), T([1., 3.]), msg="custom")) == "custom"
    assert _msg(lambda: assert_close(T([1., 2.]), T([1., 2.5]), msg=lambda m: "X" + m)).startswith("XTensor-likes")
    assert _msg(lambda: assert_close(T([1., 2.]), T([1., 3.]), rtol=1e-3), ValueError) == (
        "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol.")
    assert_close(T([1., 2.]), T([1., 2.1]), rtol=0.1, atol=0)
    assert "Tensor-likes are not equal!" in _msg(lambda: assert_close(T([1., 2.]), T([1., 2.0001]), atol=0, rtol=0))
    # half precision: float16 defaults (rtol 1e-3), differences in float16
    assert _msg(lambda: assert_close(T([1., 2.], dtype=tp.float16), T([1., 2.01], dtype=tp.float16))).endswith(
        "Greatest relative difference: 0.00485992431640625 at index (1,) (up to 0.001 allowed)")
    assert_close(T([1., 2.], dtype=tp.bfloat16), T([1., 2.01], dtype=tp.bfloat16))      # within 1.6e-2
