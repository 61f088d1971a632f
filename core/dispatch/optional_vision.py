"""Optional kernels of the vision family (tensorplug.vision.ops): nms and roi_align.

Each kernel named in OPTIONAL has a decomposition here (kernel table K first); a backend may
provide it natively. The frontend validates arguments and owns the gradient: roi_align is linear in
x, so its backward is the transposed gather (a scatter-add through the same sampling table).

`roi_align_table` (NumPy, on the host: the roi coordinates only decide *where* to sample) is shared
by the decomposition, the NumPy backend and the frontend's backward."""
from __future__ import annotations

import numpy as np

OPTIONAL: dict[str, str] = {
    "nms": "nms(boxes, scores, iou_threshold) -> int64 indices of the kept boxes, by decreasing score "
           "(ties: lower index first): boxes (N, 4) as (x1, y1, x2, y2), scores (N,), both of one float "
           "dtype; a box is dropped when its IoU with a kept, higher-scored box is > iou_threshold; "
           "IoU = inter / (area_i + area_j - inter), areas (x2 - x1) * (y2 - y1), computed in that dtype",
    "roi_align": "roi_align(x, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned) -> "
                 "(K, C, pooled_h, pooled_w): x (N, C, H, W), rois (K, 5) rows (batch index, x1, y1, x2, "
                 "y2) in x's dtype; each output bin averages bilinear samples of x on a grid (sampling_ratio "
                 "per side, or ceil(roi size / bins) when <= 0), as roi_align_table describes",
}


def roi_align_table(rois, H, W, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    """(idx, wts): int64 and float arrays of shape (K, pooled_h * pooled_w, M) such that
    out[k, c, p] = sum_m wts[k, p, m] * x[b_k, c].flat[idx[k, p, m]], with b_k = rois[k, 0]. Padding
    slots (rois with fewer samples, samples outside the map) have weight 0 and index 0.

    The geometry is computed in rois' dtype, as torchvision's kernel does: a sample at (y, x) counts
    0 when y < -1, y > H, x < -1 or x > W; otherwise coordinates below 0 clamp to 0 and those at or
    past the last row/column clamp to it; the four neighbours get the bilinear weights; each bin's
    sum is divided by its number of samples (at least 1)."""
    rois = np.asarray(rois)
    ft = rois.dtype.type if rois.dtype.kind == "f" else np.float64
    K = rois.shape[0]
    P = pooled_h * pooled_w
    off = ft(0.5) if aligned else ft(0)
    sc = ft(spatial_scale)
    x1, y1, x2, y2 = (rois[:, i].astype(ft) * sc - off for i in range(1, 5))
    rw, rh = x2 - x1, y2 - y1
    if not aligned:                      # legacy behaviour: rois at least 1x1
        rw, rh = np.maximum(rw, ft(1)), np.maximum(rh, ft(1))
    bh, bw = rh / ft(pooled_h), rw / ft(pooled_w)
    if sampling_ratio > 0:
        gh = np.full(K, sampling_ratio, dtype=np.int64)
        gw = gh.copy()
    else:
        gh = np.ceil(rh / ft(pooled_h)).astype(np.int64)
        gw = np.ceil(rw / ft(pooled_w)).astype(np.int64)
    gh, gw = np.maximum(gh, 0), np.maximum(gw, 0)
    M = max(int((gh * gw).max()) if K else 0, 1) * 4
    idx = np.zeros((K, P, M), dtype=np.int64)
    wts = np.zeros((K, P, M), dtype=ft)
    for k in range(K):
        nh, nw = int(gh[k]), int(gw[k])
        if nh * nw == 0:
            continue
        count = ft(max(nh * nw, 1))
        iy = (np.arange(nh, dtype=ft) + ft(0.5)) * bh[k] / ft(nh)        # offsets inside a bin
        ix = (np.arange(nw, dtype=ft) + ft(0.5)) * bw[k] / ft(nw)
        py = y1[k] + np.arange(pooled_h, dtype=ft)[:, None] * bh[k] + iy[None, :]      # (ph, nh)
        px = x1[k] + np.arange(pooled_w, dtype=ft)[:, None] * bw[k] + ix[None, :]      # (pw, nw)
        y = np.broadcast_to(py[:, None, :, None], (pooled_h, pooled_w, nh, nw)).reshape(P, nh * nw)
        x = np.broadcast_to(px[None, :, None, :], (pooled_h, pooled_w, nh, nw)).reshape(P, nh * nw)
        inside = (y >= -1) & (y <= H) & (x >= -1) & (x <= W)
        y, x = np.maximum(y, ft(0)), np.maximum(x, ft(0))
        ylo, xlo = y.astype(np.int64), x.astype(np.int64)
        ytop, xtop = ylo >= H - 1, xlo >= W - 1
        ylo, xlo = np.where(ytop, H - 1, ylo), np.where(xtop, W - 1, xlo)
        yhi, xhi = np.where(ytop, H - 1, ylo + 1), np.where(xtop, W - 1, xlo + 1)
        y, x = np.where(ytop, ylo.astype(ft), y), np.where(xtop, xlo.astype(ft), x)
        ly, lx = y - ylo.astype(ft), x - xlo.astype(ft)
        hy, hx = ft(1) - ly, ft(1) - lx
        corner_idx = np.stack([ylo * W + xlo, ylo * W + xhi, yhi * W + xlo, yhi * W + xhi], -1)
        corner_w = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], -1) * inside[..., None] / count
        n = nh * nw * 4
        idx[k, :, :n] = np.where(inside[..., None], corner_idx, 0).reshape(P, n)
        wts[k, :, :n] = corner_w.reshape(P, n)
    return idx, wts


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


# -- decompositions ----------------------------------------------------------------------------
def nms(K, boxes, scores, iou_threshold):
    n = boxes.shape[0]
    if n == 0:
        return K["full"]((0,), 0, "int64")
    order = K["argsort"](scores, 0, True, True)
    b = K["index"](boxes, (order,))
    x1, y1, x2, y2 = (K["slice"](b, (slice(None), i)) for i in range(4))
    area = K["mul"](K["sub"](x2, x1), K["sub"](y2, y1))
    col = lambda v: K["reshape"](v, (n, 1))  # noqa: E731
    w = K["maximum"](K["sub"](K["minimum"](col(x2), x2), K["maximum"](col(x1), x1)), 0)
    h = K["maximum"](K["sub"](K["minimum"](col(y2), y2), K["maximum"](col(y1), y1)), 0)
    inter = K["mul"](w, h)
    iou = K["div"](inter, K["sub"](K["add"](col(area), area), inter))
    over = K["to_numpy"](K["gt"](iou, iou_threshold))           # (n, n) bool on the host
    keep = np.ones(n, dtype=bool)
    for i in range(n):                  # greedy: a kept box removes the lower-scored boxes it overlaps
        if keep[i]:
            keep[i + 1:] &= ~over[i, i + 1:]
    kept = K["from_numpy"](np.flatnonzero(keep).astype(np.int64))
    return K["copy"](K["index"](order, (kept,)))


def roi_align(K, x, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    N, C, H, W = x.shape
    R = rois.shape[0]
    r = K["to_numpy"](rois)
    idx, wts = roi_align_table(r, H, W, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)
    flat = idx + (r[:, 0].astype(np.int64) * (H * W))[:, None, None]          # rows of (N*H*W, C)
    xt = K["reshape"](K["permute"](x, (0, 2, 3, 1)), (N * H * W, C))
    g = K["index"](xt, (K["from_numpy"](flat.reshape(-1)),))                 # (R*P*M, C)
    P, M = idx.shape[1], idx.shape[2]
    g = K["mul"](K["reshape"](g, (R, P, M, C)), K["from_numpy"](wts.astype(_dt(x)).reshape(R, P, M, 1)))
    out = K["sum"](g, (2,), False)                                           # (R, P, C)
    return K["copy"](K["reshape"](K["permute"](out, (0, 2, 1)), (R, C, pooled_h, pooled_w)))
