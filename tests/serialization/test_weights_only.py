"""load(weights_only=True), the default: the allowlist (PyTorch's, plus numeric NumPy data), PyTorch's
messages for what it refuses, and add_safe_globals / safe_globals / get_safe_globals /
clear_safe_globals. Nothing a refused file names is ever called."""
import collections
import io
import os
import pickle

import numpy as np
import pytest
from serialization_helpers import zip_checkpoint

import tensorplug as tp
from tensorplug.serialization import (CheckpointError, add_safe_globals, clear_safe_globals, get_safe_globals,
                                      load, safe_globals, save)

HEAD = ("Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those "
        "steps only if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed the "
        "default value of the `weights_only` argument in `torch.load` from `False` to `True`. Re-running "
        "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
        "execution. Do it only if you got the file from a trusted source.\n\t(2) Alternatively, to load with "
        "`weights_only=True` please check the recommended steps in the following error message.\n\t"
        "WeightsUnpickler error: ")
PLAIN = ("Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` argument "
         "in `torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
         "likely succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
         "trusted source.\n")
TAIL = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with weights_only "
        "https://pytorch.org/docs/stable/generated/torch.load.html.")


@pytest.fixture(autouse=True)
def _no_user_globals():
    clear_safe_globals()
    yield
    clear_safe_globals()


class Thing:
    def __init__(self, x):
        self.x = x


class Slotted:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def __eq__(self, other):
        return type(other) is Slotted and other.a == self.a


class _System:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def unknown_global(name):
    return HEAD + (f"Unsupported global: GLOBAL {name} was not an allowed global by default. Please use "
                   f"`torch.serialization.add_safe_globals([{name}])` or the `torch.serialization.safe_globals"
                   f"([{name}])` context manager to allowlist this global if you trust this class/function.") + TAIL


def test_os_system_refused_with_pytorchs_message(tmp_path):
    buf = io.BytesIO()
    save({"a": _System()}, buf)
    with pytest.raises(pickle.UnpicklingError) as e:
        load(io.BytesIO(buf.getvalue()))
    mod = os.system.__module__
    assert str(e.value) == PLAIN + (f"\n\nTrying to load unsupported GLOBAL {mod}.system whose module {mod} is "
                                    "blocked.") + TAIL
    with pytest.raises(pickle.UnpicklingError, match="is blocked"):       # even when allowlisted
        with safe_globals([os.system]):
            load(io.BytesIO(buf.getvalue()))


def test_unknown_class_refused_with_pytorchs_message():
    buf = io.BytesIO()
    save([Thing(tp.ones(1))], buf)
    with pytest.raises(pickle.UnpicklingError) as e:
        load(io.BytesIO(buf.getvalue()))
    assert str(e.value) == unknown_global(f"{__name__}.Thing")
    assert "Unsupported global: GLOBAL print was not" in str(pytest.raises(
        pickle.UnpicklingError, load, zip_checkpoint(b"\x80\x02cbuiltins\nprint\n)R.")).value)


def test_every_refusal_calls_nothing():
    calls = []

    class Spy:
        def __reduce__(self):
            return (calls.append, (1,))
    add = pickle.dumps(Spy(), protocol=2)
    with pytest.raises(pickle.UnpicklingError):
        load(zip_checkpoint(add))
    assert calls == []


def test_add_safe_globals_and_the_registry():
    buf = io.BytesIO()
    save({"t": Thing(tp.arange(3))}, buf)
    add_safe_globals([Thing])
    assert get_safe_globals() == [Thing]
    out = load(io.BytesIO(buf.getvalue()))
    assert type(out["t"]) is Thing and out["t"].x.tolist() == [0, 1, 2]
    clear_safe_globals()
    assert get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        load(io.BytesIO(buf.getvalue()))


def test_safe_globals_context_manager_and_named_form():
    buf = io.BytesIO()
    save(Slotted(5), buf)
    with safe_globals([(Slotted, f"{__name__}.Slotted")]):
        assert get_safe_globals() == [(Slotted, f"{__name__}.Slotted")]
        assert load(io.BytesIO(buf.getvalue())) == Slotted(5)         # slot state set through BUILD
    assert get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        load(io.BytesIO(buf.getvalue()))


def test_allowlisted_tensorplug_class_by_pytorch_name():
    lin = tp.nn.Linear(2, 2)
    buf = io.BytesIO()
    save(lin, buf)                                          # names torch.nn.modules.linear.Linear
    with safe_globals([tp.nn.Linear]):
        out = load(io.BytesIO(buf.getvalue()))
    assert type(out) is tp.nn.Linear and out.weight.tolist() == lin.weight.tolist()


def test_default_allowlist_data():
    """Containers and numbers PyTorch admits: OrderedDict, Counter, set, complex, bytearray, bytes, big
    ints, floats; and the tensor types."""
    obj = {"od": collections.OrderedDict(a=1), "c": collections.Counter("aab"), "s": {1, 2}, "z": 1 + 2j,
           "ba": bytearray(b"xy"), "b": b"\x00\x01", "e": b"", "big": -2 ** 70, "f": 0.1, "t": (None, True, "s"),
           "size": tp.Size([2]), "dev": tp.device("cuda", 1), "dt": tp.int16}
    for protocol in (2, 3, 4, 5):
        if protocol >= 4:
            obj["fs"] = frozenset([3])           # (an opcode from protocol 4 on; before, a global PyTorch refuses)
        buf = io.BytesIO()
        save(obj, buf, pickle_protocol=protocol)
        out = load(io.BytesIO(buf.getvalue()))
        assert out == obj and type(out["od"]) is collections.OrderedDict and type(out["size"]) is tp.Size


def test_numpy_numeric_data_admitted():
    obj = {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "f": np.asfortranarray(np.eye(2)),
           "b": np.array([True, False]), "c": np.array([1 + 1j], dtype=np.complex64), "s": np.float16(2.5),
           "e": np.zeros((0, 2)), "be": np.arange(3, dtype=">i4")}
    buf = io.BytesIO()
    save(obj, buf)
    out = load(io.BytesIO(buf.getvalue()))
    for k, v in obj.items():          # (NumPy's own unpickling makes byte order native: ">i4" loads as int32)
        assert type(out[k]) is type(v) and out[k].dtype == v.dtype.newbyteorder("=") and np.array_equal(out[k], v), k


@pytest.mark.parametrize("obj", [np.array([object(), 1], dtype=object), np.array([(1, 2.0)], dtype="i4,f8"),
                                 np.ma.masked_array([1, 2]), np.datetime64("2020-01-01")])
def test_numpy_non_numeric_refused(obj):
    buf = io.BytesIO()
    save(obj, buf)
    with pytest.raises(pickle.UnpicklingError):
        load(io.BytesIO(buf.getvalue()))


@pytest.mark.parametrize("pkl", [
    b"\x80\x02ctorch\nFloatStorage\nJ\x00\x10\xa5\xd4\x85R.",       # FloatStorage(10**11): would allocate
    b"\x80\x02ctorch\nTensor\nJ\x00\x10\xa5\xd4\x85R.",             # the legacy constructor: would allocate
    b"\x80\x02cbuiltins\nbytearray\nJ\x00\x10\xa5\xd4\x85R.",       # bytearray(n)
    b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x04\x00\x00\x00zlib\x86R.",
    b"\x80\x02(I1\n}b.",                                             # BUILD on a dict is not PyTorch's either
    b"\x80\x02(ccollections\nOrderedDict\nio.",                      # INST: refused opcode
    b"\x80\x02\x82\x01.",                                            # EXT1
])
def test_refused_calls_and_opcodes(pkl):
    with pytest.raises(pickle.UnpicklingError):
        load(zip_checkpoint(pkl))


def test_rebuild_from_type_calls_allowlisted_callables_only():
    pkl = (b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\n(ctorch\nFloatStorage\nctorch\nTensor\n"
           b"J\x00\x10\xa5\xd4\x85}tR.")         # _rebuild_from_type_v2(FloatStorage, Tensor, (10**11,), {})
    with pytest.raises(pickle.UnpicklingError, match="Trying to call _rebuild_from_type_v2 for unrecognized"):
        load(zip_checkpoint(pkl))


def test_unsupported_operand_message():
    with pytest.raises(pickle.UnpicklingError) as e:
        load(zip_checkpoint(b"\x80\x02(ccollections\nOrderedDict\nio."))
    assert str(e.value) == PLAIN + ("Please file an issue with the following so that we can make `weights_only=True` "
                                    "compatible with your use case: WeightsUnpickler error: \n\nUnsupported operand "
                                    "105") + TAIL


def test_weights_only_false_loads_anything(tmp_path):
    buf = io.BytesIO()
    save({"t": Thing(tp.ones(2)), "f": np.array([object()], dtype=object)}, buf)
    out = load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert type(out["t"]) is Thing and out["f"].dtype == object


def test_malformed_is_checkpoint_error_not_unpickling_error():
    for pkl in (b"\x80\x02]", b"\x80\x02h\x05.", b"\x80\x02\xff.", b"\x80\x02e."):
        with pytest.raises(CheckpointError):
            load(zip_checkpoint(pkl))
