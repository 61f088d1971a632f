"""Box utilities in (x1, y1, x2, y2) form: areas, pairwise IoU, format conversion, clipping,
filtering, and non-maximum suppression (the optional kernel `nms`)."""
import tensorplug
from tensorplug import Tensor
from tensorplug.ops._core import _make

from ._utils import _tensor

__all__ = ["nms", "batched_nms", "box_area", "box_iou", "generalized_box_iou", "box_convert",
           "clip_boxes_to_image", "remove_small_boxes"]


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Indices (int64) of the boxes kept by greedy non-maximum suppression, by decreasing score:
    a box is dropped when its IoU with a kept, higher-scored box exceeds iou_threshold."""
    _tensor(boxes, "boxes")
    _tensor(scores, "scores")
    if boxes.ndim != 2:
        raise RuntimeError(f"boxes should be a 2d tensor, got {boxes.ndim}D")
    if boxes.shape[1] != 4:
        raise RuntimeError(f"boxes should have 4 elements in dimension 1, got {boxes.shape[1]}")
    if scores.ndim != 1:
        raise RuntimeError(f"scores should be a 1d tensor, got {scores.ndim}D")
    if boxes.shape[0] != scores.shape[0]:
        raise RuntimeError(f"boxes and scores should have same number of elements in dimension 0, "
                           f"got {boxes.shape[0]} and {scores.shape[0]}")
    if not boxes.dtype.is_floating_point or scores.dtype != boxes.dtype:
        if not boxes.dtype.is_floating_point:
            raise RuntimeError(f"nms: boxes must be floating point, got {boxes.dtype}")
        scores = scores.to(boxes.dtype)
    if boxes._k is not scores._k:
        raise RuntimeError("nms: boxes and scores must be on the same device")
    out = boxes._k["nms"](boxes.detach().contiguous()._data, scores.detach().contiguous()._data,
                          float(iou_threshold))
    return _make(out, tensorplug.int64, boxes._k, boxes._dev)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """nms within each category of idxs: boxes of different categories never suppress each other
    (they are shifted apart by more than the largest coordinate before one nms)."""
    if boxes.numel() == 0:
        return tensorplug.empty((0,), dtype=tensorplug.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes.dtype) * (max_coordinate + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def box_area(boxes: Tensor) -> Tensor:
    """(x2 - x1) * (y2 - y1) for each (..., 4) box."""
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def _inter_union(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = tensorplug.maximum(boxes1[:, None, :2], boxes2[:, :2])
    rb = tensorplug.minimum(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, area1[:, None] + area2 - inter


def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """(N, M) intersection over union of every pair of boxes."""
    inter, union = _inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """(N, M) IoU minus the share of the enclosing box covered by neither box."""
    inter, union = _inter_union(boxes1, boxes2)
    iou = inter / union
    lti = tensorplug.minimum(boxes1[:, None, :2], boxes2[:, :2])
    rbi = tensorplug.maximum(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = (rbi - lti).clamp(min=0)
    areai = whi[..., 0] * whi[..., 1]
    return iou - (areai - union) / areai


_FORMATS = ("xyxy", "xywh", "cxcywh")


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Boxes converted between 'xyxy' (corners), 'xywh' (corner and size) and 'cxcywh' (centre and size)."""
    if in_fmt not in _FORMATS or out_fmt not in _FORMATS:
        raise ValueError("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return tensorplug.stack((a, b, c, d), dim=-1)


def clip_boxes_to_image(boxes: Tensor, size) -> Tensor:
    """Boxes with x clamped to [0, width] and y to [0, height]; size is (height, width)."""
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return tensorplug.stack((x, y), dim=boxes.ndim).reshape(boxes.shape)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the boxes whose width and height are both at least min_size."""
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return tensorplug.where(keep)[0]
