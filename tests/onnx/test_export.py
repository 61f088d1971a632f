"""tensorplug.onnx.export: every model exported, accepted by onnx.checker (full check), run by
onnxruntime to tensorplug's outputs; dynamic axes; names; opsets; the errors."""
from __future__ import annotations

import io

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the onnx package is not installed (test extra)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (test extra)")

import tensorplug as tp  # noqa: E402
import tensorplug.nn as nn  # noqa: E402
import tensorplug.onnx  # noqa: E402,F401
from onnx_models import (MLP, Block, LeNet5, RNNModel, TransformerModel, assert_close, export_and_run,  # noqa: E402
                         resnet18)

UnsupportedOperatorError = tp.onnx.errors.UnsupportedOperatorError


def _lstm_args(t, n):
    return tp.randint(0, 50, (t, n)), (tp.randn(2, n, 24), tp.randn(2, n, 24))


# name -> (model factory, args(batch, seq), input names, dynamic axes)
MODELS = {
    "mlp": (MLP, lambda n, t: (tp.randn(n, 20),), ["x"], {"x": {0: "N"}}),
    "lenet5": (LeNet5, lambda n, t: (tp.randn(n, 1, 28, 28),), ["x"], {"x": {0: "N"}}),
    "resnet18": (resnet18, lambda n, t: (tp.randn(n, 3, 32, 32),), ["x"], {"x": {0: "N"}}),
    "lstm_lm": (lambda: RNNModel("LSTM", 50, 16, 24, 2), _lstm_args, ["tokens", "h0", "c0"],
                {"tokens": {0: "T", 1: "N"}, "h0": {1: "N"}, "c0": {1: "N"}}),
    "gru_lm": (lambda: RNNModel("GRU", 50, 16, 24, 2), lambda n, t: (tp.randint(0, 50, (t, n)), tp.randn(2, n, 24)),
               ["tokens", "h0"], {"tokens": {0: "T", 1: "N"}, "h0": {1: "N"}}),
    "rnn_tanh_lm": (lambda: RNNModel("RNN_TANH", 50, 16, 24, 2),
                    lambda n, t: (tp.randint(0, 50, (t, n)), tp.randn(2, n, 24)),
                    ["tokens", "h0"], {"tokens": {0: "T", 1: "N"}, "h0": {1: "N"}}),
    "transformer": (lambda: TransformerModel(50, 16, 2, 32, 2), lambda n, t: (tp.randint(0, 50, (t, n)),),
                    ["src"], {"src": {0: "T", 1: "N"}}),
    "mingpt_block": (Block, lambda n, t: (tp.randn(n, t, 32),), ["x"], {"x": {0: "N", 1: "T"}}),
}


def _model(name):
    tp.manual_seed(0)
    return MODELS[name][0]().eval()


@pytest.mark.parametrize("name", list(MODELS))
def test_model_exports_and_runs_to_the_same_outputs(name):
    """Each model: checker-valid, and onnxruntime's outputs equal tensorplug's (1e-4)."""
    m = _model(name)
    args = MODELS[name][1](3, 7)
    proto, outs = export_and_run(m, args)
    assert proto.opset_import[0].version == 20
    assert_close(outs, m(*args))


@pytest.mark.parametrize("name", list(MODELS))
def test_dynamic_axes_run_on_other_batch_and_sequence_sizes(name):
    """Exported on batch 3 (sequence 7), run on batch 5 (sequence 4): the dims given are symbolic."""
    _, make, names, axes = MODELS[name]
    m = _model(name)
    other = make(5, 4)
    flat = []
    for a in other:
        flat.extend(a if isinstance(a, tuple) else (a,))
    proto, outs = export_and_run(m, make(3, 7), {n: t.numpy() for n, t in zip(names, flat)}, input_names=names,
                                 dynamic_axes=axes)
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input}
    for n, ax in axes.items():
        for d, sym in ax.items():
            assert dims[n][d] == sym
    assert_close(outs, m(*other))


@pytest.mark.parametrize("opset", [13, 14, 15, 16, 17, 18, 19])
@pytest.mark.parametrize("name", ["mlp", "lstm_lm", "transformer", "mingpt_block"])
def test_older_opsets(name, opset):
    """Opsets 13-19 (Split/Squeeze/ReduceSum axes as inputs, LayerNormalization from 17, Gelu from 20)."""
    m = _model(name)
    args = MODELS[name][1](2, 5)
    proto, outs = export_and_run(m, args, opset_version=opset)
    assert proto.opset_import[0].version == opset
    assert_close(outs, m(*args))


def test_mlp_matches_a_float64_numpy_reference():
    """The exported MLP computes tanh/relu/affine layers as a float64 NumPy forward does."""
    m = _model("mlp")
    x = tp.randn(4, 20)
    _, (y,) = export_and_run(m, (x,))
    w = {k: v.detach().numpy().astype(np.float64) for k, v in m.state_dict().items()}
    h = np.tanh(x.numpy().astype(np.float64) @ w["fc1.weight"].T + w["fc1.bias"])
    h = np.maximum(h @ w["fc2.weight"].T + w["fc2.bias"], 0)
    np.testing.assert_allclose(y, h @ w["fc3.weight"].T + w["fc3.bias"], rtol=1e-4, atol=1e-5)


def test_names_of_inputs_outputs_and_initializers(tmp_path):
    """input_names/output_names as given; initializers named as in the state dict; default names
    as PyTorch's (onnx::<first consumer>_<i>, <name>_dynamic_axes_<k>); f may be a path."""
    m = _model("mlp")
    path = tmp_path / "mlp.onnx"
    tp.onnx.export(m, (tp.randn(2, 20),), str(path), input_names=["x"], output_names=["logits"],
                   dynamic_axes={"x": [0], "logits": {0: "batch"}})
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["x"]
    assert [o.name for o in proto.graph.output] == ["logits"]
    assert sorted(i.name for i in proto.graph.initializer) == sorted(m.state_dict())
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    buf = io.BytesIO()
    tp.onnx.export(m, tp.randn(2, 20), buf)
    proto = onnx.load_from_string(buf.getvalue())
    assert [i.name for i in proto.graph.input] == ["onnx::Reshape_0"]
    assert [n.op_type for n in proto.graph.node] == ["Constant", "Reshape", "Gemm", "Tanh", "Gemm", "Relu", "Gemm"]


def test_tuple_outputs_of_an_lstm_lm_and_the_word_language_model_call(tmp_path):
    """word_language_model's call: export(model, (dummy_input, hidden), path); three outputs
    (log-probabilities, h_n, c_n), and GRU / RNN_TANH models likewise."""
    for kind in ("LSTM", "GRU", "RNN_TANH"):
        tp.manual_seed(0)
        model = RNNModel(kind, 30, 8, 8, 2).eval()
        dummy = tp.zeros(6, 2, dtype=tp.long)
        hidden = model.init_hidden(2)
        path = tmp_path / f"{kind}.onnx"
        tp.onnx.export(model, (dummy, hidden), str(path))
        onnx.checker.check_model(onnx.load(str(path)), full_check=True)
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        flat = [dummy, *(hidden if isinstance(hidden, tuple) else (hidden,))]
        outs = sess.run(None, {i.name: t.numpy() for i, t in zip(sess.get_inputs(), flat)})
        assert len(outs) == (3 if kind == "LSTM" else 2)
        assert_close(outs, model(dummy, hidden))


def test_train_mode_model_is_exported_in_eval_mode_and_keeps_its_mode():
    """TrainingMode.EVAL (the default): dropout is the identity and batch norm uses running
    statistics in the export; the model and its submodules are in train mode again afterwards."""
    tp.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.ReLU(), nn.Linear(8, 3))
    m.train()
    m(tp.randn(16, 6))                          # running statistics away from their initial values
    x = tp.randn(4, 6)
    proto, (y,) = export_and_run(m, (x,))
    assert m.training and all(c.training for c in m.modules())
    assert "Dropout" not in {n.op_type for n in proto.graph.node}
    m.eval()
    np.testing.assert_allclose(y, m(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_export_params_false_makes_parameters_inputs():
    """export_params=False: parameters are graph inputs (no initializers), fed at run time."""
    m = _model("mlp")
    x = tp.randn(3, 20)
    feeds = {"x": x.numpy(), **{k: v.detach().numpy() for k, v in m.state_dict().items()}}
    proto, (y,) = export_and_run(m, (x,), feeds, input_names=["x"], export_params=False)
    assert not proto.graph.initializer
    assert sorted(i.name for i in proto.graph.input) == sorted(["x", *m.state_dict()])
    np.testing.assert_allclose(y, m(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_without_constant_folding_ops_on_parameters_are_recorded():
    """do_constant_folding=False keeps the ops that read only parameters (here weight * 2)."""
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return x @ (self.fc.weight * 2).t()
    tp.manual_seed(0)
    m, x = Scaled(), tp.randn(3, 4)
    folded, (y1,) = export_and_run(m, (x,))
    kept, (y2,) = export_and_run(m, (x,), do_constant_folding=False)
    assert [n.op_type for n in folded.graph.node] == ["MatMul"]
    assert {"Mul", "Transpose", "MatMul"} <= {n.op_type for n in kept.graph.node}
    want = m(x).detach().numpy()
    np.testing.assert_allclose(y1, want, rtol=1e-5)
    np.testing.assert_allclose(y2, want, rtol=1e-5)


def test_an_op_without_mapping_is_an_error_naming_it():
    """UnsupportedOperatorError (an OnnxExporterError, a RuntimeError) names the op."""
    class Cum(nn.Module):
        def forward(self, x):
            return tp.cumsum(x.relu(), 1)
    with pytest.raises(UnsupportedOperatorError, match="Exporting the operator 'cumsum' to ONNX opset "
                                                       "version 20 is not supported"):
        tp.onnx.export(Cum(), (tp.randn(2, 3),), io.BytesIO())
    assert issubclass(UnsupportedOperatorError, tp.onnx.OnnxExporterError)
    assert issubclass(UnsupportedOperatorError, RuntimeError)

    class SetItem(nn.Module):
        def forward(self, x):
            y = x * 2
            y[0] = 0.0
            return y
    with pytest.raises(UnsupportedOperatorError, match="'__setitem__'"):
        tp.onnx.export(SetItem(), (tp.randn(2, 3),), io.BytesIO())


def test_bad_opset_and_state_after_an_error():
    """An opset outside 13-20 is a ValueError; after a failed export ops are unpatched again."""
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 9"):
        tp.onnx.export(_model("mlp"), (tp.randn(2, 20),), io.BytesIO(), opset_version=9)
    add = tp.Tensor.__add__
    with pytest.raises(UnsupportedOperatorError):
        tp.onnx.export(lambda x: tp.cumsum(x + 1, 0), (tp.randn(2),), io.BytesIO())
    assert tp.Tensor.__add__ is add and not tp.onnx.is_in_onnx_export()
    x = tp.randn(3)
    assert x.requires_grad is False and isinstance(x.size(0), int) and type(x.size(0)) is int


def test_is_in_onnx_export():
    """True inside the traced forward only."""
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(tp.onnx.is_in_onnx_export())
            return x.sigmoid()
    assert not tp.onnx.is_in_onnx_export()
    _, (y,) = export_and_run(Probe(), (tp.randn(3),))
    assert seen == [True] and not tp.onnx.is_in_onnx_export()
    x = tp.randn(3)
    np.testing.assert_allclose(ort_run_sigmoid(x), 1 / (1 + np.exp(-x.numpy().astype(np.float64))), rtol=1e-6)


def ort_run_sigmoid(x):
    class S(nn.Module):
        def forward(self, x):
            return tp.sigmoid(x)
    _, (y,) = export_and_run(S(), (x,))
    return y


_HIDDEN = {"act": tp.tanh}        # an op reached through a dict: a place the tracer does not patch


def test_an_op_the_tracer_did_not_see_is_an_error_not_a_constant():
    """A result computed from the inputs outside the recorded ops is caught (it has a grad_fn while
    tracing) instead of being written into the graph as a constant."""
    class Hidden(nn.Module):
        def forward(self, x):
            return _HIDDEN["act"](x) * 2
    with pytest.raises(UnsupportedOperatorError, match="'Tanh'.*did not record"):
        tp.onnx.export(Hidden(), (tp.randn(2, 3),), io.BytesIO())
