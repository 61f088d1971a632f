"""Bad inputs issue 19 lists: PyTorch's exception types and messages (checked against PyTorch 2.13),
and the values accepted next to each limit."""
import numpy as np
import pytest

import tensorplug as tp

_GRAD_HINT = "The gradient must match the tensor's grad_dtype"


@pytest.mark.parametrize("value,dt,ctype", [
    (300, tp.uint8, "uint8_t"), (-256, tp.uint8, "uint8_t"), (-0.5, tp.uint8, "uint8_t"), (255.5, tp.uint8, "uint8_t"),
    (128, tp.int8, "int8_t"), (-129, tp.int8, "int8_t"), (127.5, tp.int8, "int8_t"), (float("nan"), tp.int8, "int8_t"),
    (float("inf"), tp.int32, "int"), (2 ** 40, tp.int16, "int16_t"), (2 ** 63, tp.int64, "int64_t"),
    (1j, tp.int8, "int8_t"), (65520.0, tp.float16, "c10::Half"), (1e40, tp.float32, "float"),
    (1e39, tp.bfloat16, "c10::BFloat16"), (1 + 1j, tp.float64, "double"),
    (1e40 + 0j, tp.complex64, "c10::complex<float>"),
])
def test_fill_value_overflow(value, dt, ctype):
    msg = f"value cannot be converted to type {ctype} without overflow"
    with pytest.raises(RuntimeError, match=msg.replace("<", ".").replace(">", ".")):
        tp.full((2,), value, dtype=dt)
    x = tp.zeros(3, dtype=dt)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.fill_(value)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.masked_fill(tp.tensor([True, False, True]), value)
    with pytest.raises(RuntimeError, match="without overflow"):
        x[0] = value
    assert bool((x == 0).all())          # nothing was written


@pytest.mark.parametrize("value,dt,expected", [
    (-1, tp.uint8, 255), (-255, tp.uint8, 1), (255, tp.uint8, 255), (-128, tp.int8, -128), (127.0, tp.int8, 127),
    (-128.0, tp.int8, -128), (1.9, tp.int8, 1), (1 + 0j, tp.int8, 1), (65504.0, tp.float16, 65504.0),
    (float("inf"), tp.float32, np.inf), (float("nan"), tp.float16, np.nan), (2 ** 64 - 1, tp.float32, 2.0 ** 64),
    (5, tp.bool, True), (True, tp.int8, 1), (2 ** 63 - 1, tp.int64, 2 ** 63 - 1),
])
def test_fill_values_that_fit(value, dt, expected):
    for r in (tp.full((2,), value, dtype=dt), tp.zeros(2, dtype=dt).fill_(value),
              tp.zeros(2, dtype=dt).masked_fill(tp.tensor([True, True]), value)):
        assert r.dtype is dt
        np.testing.assert_array_equal(r.numpy(), np.array([expected] * 2, dtype=r.numpy().dtype))


def test_fill_value_type_errors():
    with pytest.raises(TypeError, match=r"full\(\): argument 'fill_value' \(position 2\) must be Number, not str"):
        tp.full((2,), "x")
    with pytest.raises(TypeError, match="must be Number, not str"):
        tp.zeros(2).fill_("x")
    with pytest.raises(OverflowError, match="int too big to convert"):
        tp.full((2,), 2 ** 70, dtype=tp.float32)


@pytest.mark.parametrize("name,exc,msg", [
    ("neg", RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                          "invert a mask, use the `~` or `logical_not()` operator instead."),
    ("abs", NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"),
    ("floor", NotImplementedError, "\"floor_vml_cpu\" not implemented for 'Bool'"),
    ("ceil", NotImplementedError, "\"ceil_vml_cpu\" not implemented for 'Bool'"),
    ("trunc", NotImplementedError, "\"trunc_vml_cpu\" not implemented for 'Bool'"),
    ("round", NotImplementedError, "\"round_vml_cpu\" not implemented for 'Bool'"),
    ("frac", NotImplementedError, "\"frac_cpu\" not implemented for 'Bool'"),
    ("relu", RuntimeError, "Boolean inputs not supported for relu"),
])
def test_bool_unary_ops(name, exc, msg):
    b = tp.tensor([True, False])
    with pytest.raises(exc) as info:
        getattr(tp, name)(b)
    assert str(info.value) == msg
    if name == "neg":
        with pytest.raises(exc, match="Negation"):
            -b
    # the integer versions still work
    assert getattr(tp, name)(tp.tensor([2, -3])).tolist() == {"neg": [-2, 3], "abs": [2, 3], "relu": [2, 0],
                                                            "frac": [0, 0]}.get(name, [2, -3])


def test_square_of_bool_is_int64():
    r = tp.square(tp.tensor([True, False]))
    assert r.dtype is tp.int64 and r.tolist() == [1, 0]


def test_eye_arguments():
    with pytest.raises(RuntimeError, match="^n must be greater or equal to 0, got -1$"):
        tp.eye(-1)
    with pytest.raises(RuntimeError, match="^m must be greater or equal to 0, got -2$"):
        tp.eye(2, -2)
    with pytest.raises(TypeError, match=r"eye\(\): argument 'n' \(position 1\) must be int, not float"):
        tp.eye(2.0)
    np.testing.assert_array_equal(tp.eye(0).numpy(), np.eye(0, dtype=np.float32))
    np.testing.assert_array_equal(tp.eye(2, 3).numpy(), np.eye(2, 3, dtype=np.float32))


def test_more_than_64_dims():
    msg = "only tensors with up to 64 dims are supported, got 65 dims"
    for fn in (lambda: tp.zeros([1] * 65), lambda: tp.ones(1).reshape([1] * 65), lambda: tp.ones(1).view([1] * 65),
               lambda: tp.ones([1] * 64).unsqueeze(0), lambda: tp.ones(1).expand([1] * 65),
               lambda: tp.rand([1] * 65)):
        with pytest.raises(RuntimeError, match=msg):
            fn()
    x = tp.ones([1] * 64)                          # the limit itself is fine
    assert x.ndim == 64 and x.reshape(1).tolist() == [1.0]


@pytest.mark.parametrize("fn,msg", [
    (lambda: tp.zeros(2 ** 62), r"Storage size calculation overflowed with sizes=\[4611686018427387904\]"),
    (lambda: tp.empty(2 ** 31, 2 ** 31, 4), "Storage size calculation overflowed"),
    (lambda: tp.rand(2 ** 62), "Storage size calculation overflowed"),
    (lambda: tp.randint(0, 5, (2 ** 62,)), "Storage size calculation overflowed"),
    (lambda: tp.randperm(2 ** 62), "Storage size calculation overflowed"),
    (lambda: tp.arange(0, 1, 1e-30), "Storage size calculation overflowed"),
    (lambda: tp.linspace(0, 1, 2 ** 62), "Storage size calculation overflowed"),
    (lambda: tp.empty(2 ** 40, 2 ** 20), r"can't allocate memory: you tried to allocate 4611686018427387904 bytes"),
    (lambda: tp.zeros(0, 2 ** 62), "cannot represent an empty tensor of size"),
    (lambda: tp.zeros(-1), "Trying to create tensor with negative dimension -1"),
    (lambda: tp.arange(float("nan")), "unsupported range: 0 -> nan"),
    (lambda: tp.arange(0, float("inf")), "unsupported range: 0 -> inf"),
])
def test_huge_and_negative_sizes(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


def test_bernoulli_checks_probabilities():
    msg = r"Expected p_in >= 0 && p_in <= 1 to be true, but got false."
    for p in ([1.5], [-0.5], [0.5, float("nan")]):
        with pytest.raises(RuntimeError, match=msg):
            tp.bernoulli(tp.tensor(p))
        with pytest.raises(RuntimeError, match=msg):
            tp.zeros(len(p)).bernoulli_(tp.tensor(p))
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        tp.zeros(2).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=-0.1"):
        tp.bernoulli(tp.zeros(2), p=-0.1)
    assert tp.bernoulli(tp.tensor([0.0, 1.0, 1.0, 0.0])).tolist() == [0.0, 1.0, 1.0, 0.0]
    assert tp.bernoulli(tp.zeros(0)).shape == (0,)


def test_grad_assignment_checks():
    p = tp.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        p.grad = tp.zeros(2, dtype=tp.float64)
    assert str(info.value).startswith("attempting to assign a gradient with dtype 'double' to a tensor with "
                                      "grad_dtype 'Float'. " + _GRAD_HINT)
    with pytest.raises(RuntimeError, match="with dtype 'long int' to a tensor with grad_dtype 'Float'"):
        p.grad = tp.zeros(2, dtype=tp.int64)
    with pytest.raises(RuntimeError, match="with dtype 'double' to a tensor with grad_dtype 'Float'"):
        p.grad = tp.zeros(3, dtype=tp.float64)           # dtype is checked before size, as PyTorch
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[3\]' to a tensor of size"):
        p.grad = tp.zeros(3)
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        p.grad = p
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type int"):
        p.grad = 3
    p.grad = tp.ones(2)
    assert p.grad.tolist() == [1.0, 1.0]
    p.grad = None
    assert p.grad is None


def test_grad_device_message():
    from tensorplug.tensor import _grad_device_error
    cpu, meta = tp.device("cpu"), tp.device("meta")
    assert _grad_device_error(meta, cpu) == ("attempting to assign a gradient with device type 'meta' to a tensor "
                                             "with device type 'cpu'. Please ensure that the gradient and the "
                                             "tensor are on the same device")
    assert "located on device with index '1' to a tensor located on device with index '0'" in \
        _grad_device_error(tp.device("cuda", 1), tp.device("cuda", 0))


def test_grad_dtype():
    p = tp.zeros(2, requires_grad=True)
    assert p.grad_dtype is tp.float32
    p.grad_dtype = tp.float64
    with pytest.raises(RuntimeError, match="with dtype 'float' to a tensor with grad_dtype 'Double'"):
        p.grad = tp.zeros(2)
    (p * 3).sum().backward()                   # backward accumulates in grad_dtype
    assert p.grad.dtype is tp.float64 and p.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="Cannot set grad_dtype to 'Float' because there is already a gradient "
                                           "with dtype 'Double'"):
        p.grad_dtype = tp.float32
    q = tp.zeros(2, requires_grad=True)
    q.grad_dtype = None                        # any dtype
    q.grad = tp.ones(2, dtype=tp.float64)
    (q * 2).sum().backward()
    assert q.grad.dtype is tp.float64 and q.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="grad_dtype must be a torch.dtype or None, but got str"):
        q.grad_dtype = "x"
    with pytest.raises(RuntimeError, match="grad_dtype can only be set on leaf tensors."):
        (q * 2).grad_dtype = None
