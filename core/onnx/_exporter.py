"""The exporter: trace one forward pass of a model and write it as an ONNX model (`onnx` package).

What PyTorch's classic (TorchScript-tracing) exporter does, with this project's tracer
(core/onnx/_tracer.py) and op table (core/onnx/symbolics.py, symbolic_rnn.py): inputs are the
tensors in `args` (nested tuples/lists flattened, in order), parameters and buffers the forward reads
become initializers named as in the state dict, the model's outputs (a tensor, or tuples/lists/dicts
of them) the graph outputs. The model runs in eval mode during export (TrainingMode.EVAL, PyTorch's
default) and gets its own modes back afterwards.
"""
from __future__ import annotations

import enum
import os
import sys
import warnings

from ..tensor import Tensor

DEFAULT_OPSET = 20                 # PyTorch 2.13's default for the classic exporter
MIN_OPSET, MAX_OPSET = 13, 20


class TrainingMode(enum.IntEnum):
    """The mode modules run in while exported (torch.onnx.TrainingMode)."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """torch.onnx.OperatorExportTypes (only ONNX is implemented: an op without mapping is an error)."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def _import_onnx():
    try:
        import onnx
    except ImportError:
        from ..utils.collect_env import pip_install_command
        raise ImportError("ONNX export needs the 'onnx' package (tensorplug's 'onnx' extra); install it with: "
                          + pip_install_command("onnx")) from None
    return onnx


def _flat_tensors(x, out):
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for a in x:
            _flat_tensors(a, out)
    elif isinstance(x, dict):
        for a in x.values():
            _flat_tensors(a, out)
    return out


def _axes_spec(dynamic_axes, names):
    """{value name: {dim: symbol}} with PyTorch's default symbols for the list form."""
    spec = {}
    for key, axes in (dynamic_axes or {}).items():
        if key not in names:
            warnings.warn(f"Provided key {key} for dynamic axes is not a valid input/output name", UserWarning,
                          stacklevel=3)
            continue
        if isinstance(axes, dict):
            spec[key] = {int(d): str(s) for d, s in axes.items()}
        else:
            spec[key] = {int(d): f"{key}_dynamic_axes_{i + 1}" for i, d in enumerate(axes)}
    return spec


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=False, training=TrainingMode.EVAL,
           input_names=None, output_names=None, operator_export_type=OperatorExportTypes.ONNX,
           opset_version=None, do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=False,
           custom_opsets=None, export_modules_as_functions=False, autograd_inlining=True, dynamo=False,
           **unused):
    """Export `model` (an nn.Module or a function of tensors) to ONNX by tracing one call on `args`.

    args: a tensor or a tuple of arguments (a trailing dict: keyword arguments); f: a path or a
    writable binary file object. input_names / output_names name the flattened inputs and outputs;
    dynamic_axes maps such a name to {dim: symbol} or [dims] (symbols then `<name>_dynamic_axes_<k>`);
    opset_version: 13-20 (default 20). With do_constant_folding (the default), ops whose inputs are
    all constants (parameters included) are evaluated at export. Every op the forward runs must have an
    ONNX mapping, else `tensorplug.onnx.errors.UnsupportedOperatorError` names it. `dynamo=True` is
    accepted and exports by tracing too (there is no dynamo here). Returns None.

        >>> tensorplug.onnx.export(model, (x,), "model.onnx", input_names=["x"],
        ...                        dynamic_axes={"x": {0: "batch"}})
    """
    onnx = _import_onnx()
    from . import _tracer
    from ._graph import Graph
    from .symbolic_rnn import MODULE_TABLE
    from .symbolics import TABLE

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"Unsupported ONNX opset version: {opset} (tensorplug exports opsets {MIN_OPSET} to "
                         f"{MAX_OPSET})")
    if operator_export_type not in (None, OperatorExportTypes.ONNX):
        raise ValueError("only operator_export_type=OperatorExportTypes.ONNX is supported")
    if _tracer._active is not None:
        raise RuntimeError("tensorplug.onnx.export() was called during an export")
    if isinstance(args, Tensor) or not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kwargs.update(args[-1])
        args = args[:-1]
    training = TrainingMode(training)
    fold = bool(do_constant_folding) and training != TrainingMode.TRAINING

    inputs = []
    for t in _flat_tensors(list(args) + [kwargs], []):
        if all(t is not u for u in inputs):
            inputs.append(t)
    g = Graph(opset, fold, dynamic=bool(dynamic_axes))
    in_names = list(input_names or [])
    placeholders = [f"\x00input{i}" for i in range(len(inputs))]
    for t, name in zip(inputs, placeholders):
        g.bind(t, name)

    from ..nn.modules.module import Module
    is_module = isinstance(model, Module)
    modes = []
    param_inputs = []
    tr = _tracer.Trace(g, TABLE, MODULE_TABLE)
    extra = set()
    if is_module:
        for name, m in model.named_modules():
            tr.module_names[id(m)] = name.rsplit(".", 1)[-1]
            modes.append((m, m.training))
            extra.add(type(m).__module__)
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if p is None or id(p) in g.values:
                continue
            if export_params:
                g.named[id(p)] = (p, name)
            else:
                g.bind(p, name)
                param_inputs.append((p, name))
        if training == TrainingMode.EVAL:
            model.train(False)
        elif training == TrainingMode.TRAINING:
            model.train(True)
    else:
        extra.add(getattr(model, "__module__", None))
    extra_modules = [sys.modules[n] for n in extra if n in sys.modules]
    # grad flags while tracing: inputs on (a tensor computed from them outside the tracer then has a
    # grad_fn, and is caught instead of being taken for a constant), parameters off
    flags = [(t, t.requires_grad) for t in inputs] + [(p, p.requires_grad) for p, _ in g.named.values()]
    from ..autograd import grad_mode
    try:
        for p, _ in g.named.values():
            p.requires_grad_(False)
        for t in inputs:
            if t._dtype.category == 2 and t.grad_fn is None:
                t.requires_grad_(True)
        with grad_mode.enable_grad():
            tr.patch(extra_modules)
            _tracer._active = tr
            try:
                out = model(*args, **kwargs)
            finally:
                _tracer._active = None
                tr.restore()
    finally:
        for m, mode in modes:
            m.training = mode
        for t, flag in flags:
            if t.grad_fn is None and t.requires_grad != flag:
                t.requires_grad_(flag)

    outputs = _flat_tensors(out, [])
    for t in outputs:
        if t.grad_fn is not None and not g.is_dynamic(t):
            _tracer.escaped(g, t)
    model_proto = _build(onnx, g, inputs, placeholders, in_names, outputs, list(output_names or []),
                         param_inputs, dynamic_axes, keep_initializers_as_inputs)
    if verbose:
        print(onnx.helper.printable_graph(model_proto.graph))
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            onnx.save(model_proto, os.fspath(f))
        else:
            f.write(model_proto.SerializeToString())
    return None


def _build(onnx, g, inputs, placeholders, in_names, outputs, out_names, param_inputs, dynamic_axes,
           keep_initializers_as_inputs):
    from onnx import helper, numpy_helper
    from ._graph import onnx_type

    nodes = g.nodes
    # graph outputs: each a value of its own (an Identity where it is an input, a constant or repeated)
    produced = {o for n in nodes for o in n.outputs}
    out_vals, seen = [], set()
    for t in outputs:
        v = g.v(t)
        if v not in produced or v in seen:
            v = g.op("Identity", v)
            produced.add(v)
        seen.add(v)
        out_vals.append(v)
    # drop nodes and initializers nothing needed reads
    needed = set(out_vals)
    kept = []
    for n in reversed(nodes):
        if any(o in needed for o in n.outputs):
            kept.append(n)
            needed.update(i for i in n.inputs if i)
    kept.reverse()
    # names: outputs as asked (else their values' names), inputs as asked (else PyTorch's onnx::<Op>_<i>)
    rename = {}
    for i, v in enumerate(out_vals):
        if i < len(out_names):
            rename[v] = out_names[i]
    first_use = {}
    for n in kept:
        for i in n.inputs:
            first_use.setdefault(i, n.op_type)
    final_in = []
    for i, ph in enumerate(placeholders):
        name = in_names[i] if i < len(in_names) else f"onnx::{first_use.get(ph, 'Input')}_{i}"
        rename[ph] = name
        final_in.append(name)

    def rn(x):
        return rename.get(x, x)

    onnx_nodes = []
    for n in kept:
        attrs = {k: (numpy_helper.from_array(v) if hasattr(v, "dtype") else v) for k, v in n.attrs.items()}
        onnx_nodes.append(helper.make_node(n.op_type, [rn(i) for i in n.inputs], [rn(o) for o in n.outputs],
                                           name=n.name, **attrs))
    names = set(final_in) | {rn(v) for v in out_vals}
    spec = _axes_spec(dynamic_axes, names)

    def value_info(name, t, shape=True):
        axes = spec.get(name, {})
        dims = [axes.get(d, s) for d, s in enumerate(t._data.shape)] if shape else None
        return helper.make_tensor_value_info(name, onnx_type(t._dtype), dims)

    graph_inputs = [value_info(name, t) for t, name in zip(inputs, final_in)]
    graph_inputs += [value_info(name, p) for p, name in param_inputs if name in needed]
    inits = [numpy_helper.from_array(a, name) for name, a in g.initializers.items() if name in needed]
    if keep_initializers_as_inputs:
        graph_inputs += [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in inits]
    static = not spec and not g.dynamic
    graph_outputs = [value_info(rn(v), t, shape=static) for v, t in zip(out_vals, outputs)]
    graph = helper.make_graph(onnx_nodes, "main_graph", graph_inputs, graph_outputs, inits)
    opsets = [helper.make_opsetid("", g.opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="tensorplug",
                              producer_version=_version())
    model.ir_version = helper.find_min_ir_version_for(opsets)
    if not static:
        _output_shapes(onnx, model, outputs, spec)
    return model


def _output_shapes(onnx, model, outputs, spec):
    """Output shapes under dynamic axes: what ONNX's shape inference finds, with the symbols asked for."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        found = {v.name: v for v in list(inferred.graph.output) + list(inferred.graph.value_info)}
    except Exception:       # inference is best effort here: the graph stays valid without output shapes
        found = {}
    for o, t in zip(model.graph.output, outputs):
        inf = found.get(o.name)
        axes = spec.get(o.name, {})
        if inf is not None and inf.type.tensor_type.HasField("shape"):
            o.type.tensor_type.shape.CopyFrom(inf.type.tensor_type.shape)
        elif not axes:
            continue
        else:
            for _ in range(t.ndim):
                o.type.tensor_type.shape.dim.add()
        for d, sym in axes.items():
            dim = o.type.tensor_type.shape.dim[d]
            dim.Clear()
            dim.dim_param = sym


def _version():
    from .. import __version__
    return __version__
