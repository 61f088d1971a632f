"""Records of the optional kernels of the vision family (tensorplug.dispatch.optional_vision): nms and
roi_align. References are float64 loops: the greedy suppression pair by pair, and one bilinear
sample at a time."""
from __future__ import annotations

import math

import numpy as np

from ._base import A, ErrorCase, OpRecord, Sample, register

VISION_FLOAT = ("float32", "float64")
VISION_TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-11)}


def _ops():
    import tensorplug.vision.ops as ops
    return ops


# -- nms ---------------------------------------------------------------------------------------------
def nms_ref(boxes, scores, thr):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    kept = []
    for i in order:
        ok = True
        for j in kept:
            a, b = boxes[i], boxes[j]
            iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
            ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
            inter = iw * ih
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            if inter / union > thr:
                ok = False
                break
        if ok:
            kept.append(i)
    return np.array(kept, dtype=np.int64)


def _int_boxes(rng, n, dt):
    # integer corners keep every IoU a ratio of small integers, far from the thresholds in any dtype
    xy = rng.integers(0, 12, size=(n, 2))
    wh = rng.integers(1, 8, size=(n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(dt)


def _nms_samples(dt, rng):
    b = _int_boxes(rng, 40, dt)
    s = rng.permutation(40).astype(dt)
    tied = s.copy()
    tied[::3] = 5.0                                   # equal scores: the lower index comes first
    return [
        Sample((A(b), A(s), 0.5), desc="40 boxes, threshold 0.5"),
        Sample((A(b), A(tied), 0.3), desc="tied scores, threshold 0.3"),
        Sample((A(b, "T"), A(s, "S"), 0.0), desc="transposed boxes, strided scores, threshold 0 (any overlap suppresses)"),
        Sample((A(b[:1]), A(s[:1]), 0.7), desc="one box"),
        Sample((A(np.zeros((0, 4), dt)), A(np.zeros((0,), dt)), 0.5), desc="no boxes"),
    ]


register(OpRecord("nms", "optional", VISION_FLOAT, _nms_samples, ref=nms_ref, out_dtype="int64",
                  errors=[ErrorCase("nms with boxes of shape (3, 5)",
                                    lambda T: _ops().nms(T([[0.0] * 5] * 3), T([1.0, 2.0, 3.0]), 0.5))],
                  doc="greedy non-maximum suppression by IoU, scores descending"))


# -- roi_align -----------------------------------------------------------------------------------------
def _bilinear(img, y, x):
    H, W = img.shape[-2:]
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return np.zeros(img.shape[:-2])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= H - 1:
        y0 = y1 = H - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= W - 1:
        x0 = x1 = W - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[..., y0, x0] + (1 - ly) * lx * img[..., y0, x1]
            + ly * (1 - lx) * img[..., y1, x0] + ly * lx * img[..., y1, x1])


def roi_align_ref(x, rois, scale, ph, pw, ratio, aligned):
    K, C = rois.shape[0], x.shape[1]
    out = np.zeros((K, C, ph, pw))
    off = 0.5 if aligned else 0.0
    for k in range(K):
        img = x[int(rois[k, 0])]
        x1, y1, x2, y2 = (rois[k, i] * scale - off for i in range(1, 5))
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for i in range(ph):
            for j in range(pw):
                acc = np.zeros(C)
                for a in range(gh):
                    for b in range(gw):
                        acc += _bilinear(img, y1 + i * rh / ph + (a + 0.5) * rh / ph / gh,
                                         x1 + j * rw / pw + (b + 0.5) * rw / pw / gw)
                out[k, :, i, j] = acc / count
    return out


def _roi_samples(dt, rng):
    x = rng.uniform(-2, 2, size=(2, 3, 7, 9)).astype(dt)
    # quarter-pixel corners: sample grids come out the same in float32 and float64
    rois = np.array([[0, 0.5, 1.25, 6.0, 5.5], [1, -1.5, -0.75, 3.25, 2.0], [0, 7.0, 5.0, 11.5, 9.25],
                     [1, 2.0, 2.0, 2.25, 2.5], [0, 0.0, 0.0, 8.0, 6.0]], dtype=dt)
    return [
        Sample((A(x), A(rois), 1.0, 3, 2, -1, False), desc="adaptive sampling, legacy alignment"),
        Sample((A(x), A(rois), 1.0, 2, 3, 2, True), desc="sampling_ratio 2, aligned"),
        Sample((A(x, "S"), A(rois), 0.5, 2, 2, 1, True), desc="strided x, spatial_scale 0.5"),
        Sample((A(x), A(rois * np.array([1, 2, 2, 2, 2], dtype=dt)), 0.5, 4, 4, -1, True),
               desc="adaptive sampling, several samples per bin"),
        Sample((A(x), A(np.zeros((0, 5), dt)), 1.0, 2, 2, -1, False), desc="no rois"),
    ]


register(OpRecord("roi_align", "optional", VISION_FLOAT, _roi_samples, ref=roi_align_ref, tol=VISION_TOL,
                  errors=[ErrorCase("roi_align with rois of shape (2, 4)",
                                    lambda T: _ops().roi_align(T([[[[1.0] * 4] * 4]]), T([[0.0] * 4] * 2), 2),
                                    AssertionError)],       # torchvision's check raises AssertionError
                  doc="bilinear RoI pooling (Mask R-CNN's RoIAlign)"))
