"""NumPy native kernels of the vision family (specs in tensorplug.dispatch.optional_vision)."""
from __future__ import annotations

import numpy as np

from tensorplug.dispatch.optional_vision import roi_align_table


def nms(boxes, scores, iou_threshold):
    order = np.argsort(-scores, kind="stable") if scores.dtype.kind == "f" else np.argsort(scores)[::-1]
    b = boxes[order]
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    area = (x2 - x1) * (y2 - y1)
    n = b.shape[0]
    keep = np.ones(n, dtype=bool)
    for i in range(n):              # one row of IoUs per kept box: O(N) memory
        if not keep[i]:
            continue
        j = slice(i + 1, n)
        w = np.maximum(np.minimum(x2[i], x2[j]) - np.maximum(x1[i], x1[j]), 0)
        h = np.maximum(np.minimum(y2[i], y2[j]) - np.maximum(y1[i], y1[j]), 0)
        inter = w * h
        keep[j] &= ~(inter / (area[i] + area[j] - inter) > iou_threshold)
    return order[keep].astype(np.int64)


def roi_align(x, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    N, C, H, W = x.shape
    idx, wts = roi_align_table(rois, H, W, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)
    b = rois[:, 0].astype(np.int64)
    xf = x.reshape(N, C, H * W)
    g = xf[b[:, None, None], :, idx]                        # (K, P, M, C)
    out = np.einsum("kpmc,kpm->kcp", g, wts.astype(x.dtype, copy=False))
    return np.ascontiguousarray(out.reshape(rois.shape[0], C, pooled_h, pooled_w).astype(x.dtype, copy=False))


def build() -> dict:
    return {"nms": nms, "roi_align": roi_align}
