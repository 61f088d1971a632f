"""The `Summary` protos SummaryWriter writes, one builder per kind (scalar, histogram, image, text),
from tensorplug tensors, NumPy arrays or numbers. Hyperparameters are in `_hparams.py`."""
from __future__ import annotations

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._convert import make_np
from ._image import encode_png, to_hwc, to_uint8

__all__ = ["tensorflow_bins", "scalar", "histogram", "histogram_raw", "make_histogram", "image", "text"]


def tensorflow_bins() -> list:
    """TensorFlow's default histogram edges: +-1e-12 * 1.1**k up to 1e20 in magnitude, and 0
    (built by repeated multiplication, so the edges are bit-for-bit those TensorBoard users know)."""
    pos, v = [], 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-e for e in reversed(pos)] + [0.0] + pos


def scalar(tag, value, new_style=False, double_precision=False) -> Summary:
    """One number: `simple_value` (float32 in the proto), or with new_style a tensor read by the
    scalars plugin, float32 or (double_precision) float64."""
    a = make_np(value).squeeze()
    if a.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). "
                             f"Was given size: {a.size} and {a.ndim} dimensions.")
    x = float(a)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=x)])
    proto = (TensorProto(double_val=[x], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[x], dtype="DT_FLOAT"))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=meta)])


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts) -> Summary:
    """A histogram given by its statistics and buckets (bucket_limits[i]: right edge of bucket i)."""
    if len(bucket_limits) != len(bucket_counts):
        raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
    histo = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                           bucket_limit=list(bucket_limits), bucket=list(bucket_counts))
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


def make_histogram(values: np.ndarray, bins, max_bins=None) -> HistogramProto:
    """np.histogram(values, bins), merged down to at most max_bins buckets, trimmed to the buckets
    from the first to the last non-empty one. TensorBoard stores only right edges, so one empty bucket
    is kept (or added) on the left: its right edge is the left edge of the first non-empty one."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and counts.size > max_bins:
        group = counts.size // max_bins
        counts = np.pad(counts, (0, -counts.size % group)).reshape(-1, group).sum(axis=1)
        limits = np.append(limits[:-1:group], limits[-1])
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError(f"no value falls inside the histogram's bins [{limits[0]}, {limits[-1]}] "
                         f"(the values are NaN or out of range)")
    first, last = int(filled[0]), int(filled[-1])
    if first > 0:
        counts = counts[first - 1:last + 1]
    else:
        counts = np.concatenate([[0], counts[:last + 1]])
    limits = limits[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=values.size, sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(),
                          bucket=counts.tolist())


def histogram(tag, values, bins, max_bins=None) -> Summary:
    """A histogram of `values` (any shape): bins as np.histogram takes them (edges, a count, 'auto', ...)."""
    histo = make_histogram(make_np(values).astype(np.float64), bins, max_bins)
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


def image(tag, img, dataformats="NCHW") -> Summary:
    """An image (or a batch, tiled as a grid), PNG-encoded: uint8 pixels as they are, other dtypes
    read as [0, 1] and scaled by 255."""
    hwc = to_uint8(to_hwc(make_np(img), dataformats))
    height, width, channels = hwc.shape
    if channels not in (3, 4):
        raise ValueError(f"an image must have 1, 3 or 4 channels, got {channels} (dataformats={dataformats!r}, "
                         f"shape {tuple(make_np(img).shape)})")
    png = encode_png(hwc)
    return Summary(value=[Summary.Value(tag=tag, image=Summary.Image(
        height=height, width=width, colorspace=channels, encoded_image_string=png))])


def text(tag, text_string) -> Summary:
    """A string for the text plugin (markdown), under `<tag>/text_summary`."""
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[str(text_string).encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])
