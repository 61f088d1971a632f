"""RoIAlign (He et al., Mask R-CNN): bilinear pooling of regions of a feature map to a fixed grid,
through the optional kernel `roi_align`. Its backward is the transposed gather, written in Tensor ops
(so gradients of any order exist); regions get no gradient, as in torchvision."""
import tensorplug
from tensorplug import Tensor, nn
from tensorplug.dispatch.optional_vision import roi_align_table
from tensorplug.ops._core import _gstate, _make

from ._utils import _pair, _tensor, check_roi_boxes_shape, convert_boxes_to_roi_format

__all__ = ["roi_align", "RoIAlign"]


def roi_align(input: Tensor, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """(K, C, *output_size) pooled features. boxes: Tensor[K, 5] rows (image index, x1, y1, x2, y2),
    or a list of Tensor[L, 4] per image. aligned=True shifts the sampling by half a pixel (pixel
    centres at +0.5); sampling_ratio <= 0 samples ceil(roi size / bins) points per bin and side."""
    _tensor(input, "input")
    check_roi_boxes_shape(boxes)
    rois = boxes if isinstance(boxes, Tensor) else convert_boxes_to_roi_format(boxes)
    if input.ndim != 4:
        raise RuntimeError(f"roi_align: input must be a 4-d (N, C, H, W) tensor, got {input.ndim}-d")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"roi_align: input must be floating point, got {input.dtype}")
    ph, pw = _pair(output_size)
    rois = rois.detach().to(input.dtype).contiguous()
    if rois._k is not input._k:
        raise RuntimeError("roi_align: input and boxes must be on the same device")
    if rois.shape[0]:
        b = rois[:, 0]
        if float(b.min()) < 0 or float(b.max()) >= input.shape[0] or bool((b != b.floor()).any()):
            raise IndexError(f"roi_align: box image indices must be integers in [0, {input.shape[0]})")
    args = (float(spatial_scale), ph, pw, int(sampling_ratio), bool(aligned))
    out = _make(input._k["roi_align"](input.detach().contiguous()._data, rois._data, *args),
                input.dtype, input._k, input._dev)
    if _gstate.enabled and input._rg:
        from tensorplug.autograd.graph import record
        shape = tuple(input.shape)
        record("RoiAlignBackward0", out, (input,), lambda g: (_roi_align_backward(g, rois, shape, args),))
    return out


def _roi_align_backward(grad, rois, shape, args):
    N, C, H, W = shape
    spatial_scale, ph, pw, sampling_ratio, aligned = args
    r = rois._host()
    idx, wts = roi_align_table(r, H, W, spatial_scale, ph, pw, sampling_ratio, aligned)
    K, P, M = idx.shape
    flat = idx + (r[:, 0].astype("int64") * (H * W))[:, None, None]
    dev = grad.device
    flat = tensorplug.from_numpy(flat.reshape(-1)).to(dev)
    w = tensorplug.from_numpy(wts).to(device=dev, dtype=grad.dtype).reshape(K, P, M, 1)
    g = grad.reshape(K, C, P).permute(0, 2, 1).reshape(K, P, 1, C)
    vals = (g * w).reshape(K * P * M, C)
    gx = tensorplug.zeros((N * H * W, C), dtype=grad.dtype, device=dev).index_add(0, flat, vals)
    return gx.reshape(N, H, W, C).permute(0, 3, 1, 2)


class RoIAlign(nn.Module):
    """Module form of roi_align."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")
