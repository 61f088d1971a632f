"""The three summaries of the hparams plugin: the experiment (names of hyperparameters and metrics),
the session start (this run's values) and the session end (status)."""
from __future__ import annotations

import numbers

from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.plugins.hparams import metadata
from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

from ...tensor import Tensor
from ._convert import make_np

__all__ = ["hparams"]


def _kind(value):
    """(field of struct_pb2.Value, DataType name) for a hyperparameter value. bool is a number, as
    in PyTorch (its check for int comes first), and a tensor is its first element."""
    if isinstance(value, numbers.Real):
        return "number_value", "DATA_TYPE_FLOAT64"
    if isinstance(value, str):
        return "string_value", "DATA_TYPE_STRING"
    raise ValueError("value should be one of int, float, str, bool, or tensorplug.Tensor")


def _summary(tag, **content):
    data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """(experiment, session_start_info, session_end_info) summaries for these hyperparameters and metrics.

    hparam_domain_discrete: {name: [every value that hyperparameter takes]} (same type as its value)."""
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    start, infos = SessionStartInfo(), []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            field, dtype = "number_value", "DATA_TYPE_FLOAT64"
            v = make_np(v).reshape(-1)[0].item()
        else:
            field, dtype = _kind(v)
            v = v if field == "string_value" else float(v)
        setattr(start.hparams[k], field, v)
        domain = None
        if k in domains and not isinstance(hparam_dict[k], Tensor):
            cast = str if field == "string_value" else float
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: cast(d)}) for d in domains[k]])
        infos.append(HParamInfo(name=k, type=DataType.Value(dtype), domain_discrete=domain))

    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (_summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            _summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            _summary(metadata.SESSION_END_INFO_TAG,
                     session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))
