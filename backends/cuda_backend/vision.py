"""CuPy kernels of the vision family (specs in tensorplug.dispatch.optional_vision): nms, roi_align.

Three `cupy.RawKernel`s (CUDA C below, one per float32 / float64), each with an array-module (`xp`)
lowering of the same computation, used where there is no CUDA compiler (the NumPy-based CuPy stand-in
of the CPU tests) and for float16:

- nms, in two steps. `tp_nms_mask_<T>`: the boxes sorted by decreasing score, one 64 x 64 tile of box
  pairs per block; bit j % 64 of word (i, j // 64) says whether IoU(i, j) > threshold, for j > i only.
  `tp_nms_greedy`: the greedy pass, sequential by nature, in one block on the device: box i is kept
  unless a kept box removed it, and a kept box removes the boxes of its mask row (its threads OR the
  row's words into the removed set). Chosen over copying the mask to the host for the greedy loop: no
  N^2 / 8-byte transfer, no Python iteration per box, and one synchronisation (the kept count). The
  mask costs N^2 / 8 bytes of device memory where the IoU matrix would cost 4 N^2 or 8 N^2.
- roi_align, `tp_roi_align_<T>`: one thread per output element (k, c, i, j), the sample geometry of
  dispatch.optional_vision.roi_align_table computed in the roi dtype, bilinear weights divided by the
  sample count, samples outside the map skipped (so an inf / NaN at x[b, c, 0, 0] stays out of bins
  it is not sampled in; the NumPy kernel and the xp lowering, like torchvision's CPU kernel, spread it).

The arithmetic uses the round-to-nearest intrinsics (__fadd_rn, __dmul_rn, ...), which NVRTC never
contracts into fused multiply-adds, so IoUs and sample positions round exactly as the NumPy kernels'
(a contracted a * b + c would move a sample across a pixel edge or an IoU across the threshold).
"""
from __future__ import annotations

import numpy as np

from tensorplug.dispatch.optional_vision import roi_align_table

_CTYPES = {"float32": "float", "float64": "double"}
_MASK_BITS = 64
_GREEDY_THREADS = 256
_ROI_THREADS = 256

# the rounded arithmetic of both C types (overloads: not extern "C")
_ARITH = r"""
__device__ __forceinline__ float tp_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float tp_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float tp_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float tp_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double tp_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double tp_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double tp_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double tp_div(double a, double b) { return __ddiv_rn(a, b); }
// NumPy's maximum / minimum: NaN in, NaN out (fmax / fmin would drop it)
template <typename T> __device__ __forceinline__ T tp_max(T a, T b) {
    return (a != a || b != b) ? a + b : (a > b ? a : b);
}
template <typename T> __device__ __forceinline__ T tp_min(T a, T b) {
    return (a != a || b != b) ? a + b : (a < b ? a : b);
}
"""

_NMS_MASK = _ARITH + r"""
extern "C" __global__ void tp_nms_mask_{T}(const {T}* boxes, const int n, const {T} threshold,
                                          const int words, unsigned long long* mask) {
    const int rb = blockIdx.y, cb = blockIdx.x, t = threadIdx.x;
    if (cb < rb) return;                        // only pairs j > i are ever read
    __shared__ {T} tile[64 * 4];
    const int rows = min(n - rb * 64, 64), cols = min(n - cb * 64, 64);
    if (t < cols) {
        for (int c = 0; c < 4; ++c) tile[t * 4 + c] = boxes[(long long)(cb * 64 + t) * 4 + c];
    }
    __syncthreads();
    if (t >= rows) return;
    const long long i = (long long)rb * 64 + t;
    const {T} x1 = boxes[i * 4], y1 = boxes[i * 4 + 1], x2 = boxes[i * 4 + 2], y2 = boxes[i * 4 + 3];
    const {T} area = tp_mul(tp_sub(x2, x1), tp_sub(y2, y1));
    unsigned long long bits = 0;
    for (int c = (rb == cb) ? t + 1 : 0; c < cols; ++c) {
        const {T}* b = tile + c * 4;
        const {T} w = tp_max(tp_sub(tp_min(x2, b[2]), tp_max(x1, b[0])), ({T})0);
        const {T} h = tp_max(tp_sub(tp_min(y2, b[3]), tp_max(y1, b[1])), ({T})0);
        const {T} inter = tp_mul(w, h);
        const {T} other = tp_mul(tp_sub(b[2], b[0]), tp_sub(b[3], b[1]));
        if (tp_div(inter, tp_sub(tp_add(area, other), inter)) > threshold) bits |= 1ULL << c;
    }
    mask[i * words + cb] = bits;
}
"""

_NMS_GREEDY = r"""
extern "C" __global__ void tp_nms_greedy(const unsigned long long* mask, const int n, const int words,
                                         unsigned long long* removed, unsigned char* keep) {
    for (int i = 0; i < n; ++i) {
        const bool gone = (removed[i >> 6] >> (i & 63)) & 1ULL;
        __syncthreads();                        // every thread has read before any writes
        if (!gone) {
            const unsigned long long* row = mask + (long long)i * words;
            for (int w = (i >> 6) + threadIdx.x; w < words; w += blockDim.x) removed[w] |= row[w];
        }
        if (threadIdx.x == 0) keep[i] = gone ? 0 : 1;
        __syncthreads();                        // the writes are seen by the next box's reads
    }
}
"""

_ROI_ALIGN = _ARITH + r"""
extern "C" __global__ void tp_roi_align_{T}(const {T}* x, const {T}* rois, const long long total,
                                           const int C, const int H, const int W, const int ph, const int pw,
                                           const {T} scale, const int ratio, const int aligned, {T}* out) {
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= total) return;
    const int j = (int)(e % pw), i = (int)((e / pw) % ph), c = (int)((e / ((long long)pw * ph)) % C);
    const long long k = e / ((long long)pw * ph * C);
    const {T}* r = rois + k * 5;
    const {T} off = aligned ? ({T})0.5 : ({T})0;
    const {T} x1 = tp_sub(tp_mul(r[1], scale), off), y1 = tp_sub(tp_mul(r[2], scale), off);
    const {T} x2 = tp_sub(tp_mul(r[3], scale), off), y2 = tp_sub(tp_mul(r[4], scale), off);
    {T} rw = tp_sub(x2, x1), rh = tp_sub(y2, y1);
    if (!aligned) { rw = tp_max(rw, ({T})1); rh = tp_max(rh, ({T})1); }   // legacy: rois at least 1x1
    const {T} bh = tp_div(rh, ({T})ph), bw = tp_div(rw, ({T})pw);
    long long gh = ratio, gw = ratio;
    if (ratio <= 0) { gh = (long long)ceil(tp_div(rh, ({T})ph)); gw = (long long)ceil(tp_div(rw, ({T})pw)); }
    gh = gh > 0 ? gh : 0;
    gw = gw > 0 ? gw : 0;
    {T} acc = 0;
    if (gh * gw > 0) {
        const {T} count = ({T})(gh * gw);
        const {T}* img = x + ((long long)r[0] * C + c) * H * W;
        const {T} ybase = tp_add(y1, tp_mul(({T})i, bh)), xbase = tp_add(x1, tp_mul(({T})j, bw));
        for (long long a = 0; a < gh; ++a) {
            {T} y = tp_add(ybase, tp_div(tp_mul(tp_add(({T})a, ({T})0.5), bh), ({T})gh));
            if (!(y >= -1 && y <= ({T})H)) continue;       // (NaN too)
            for (long long b = 0; b < gw; ++b) {
                {T} xs = tp_add(xbase, tp_div(tp_mul(tp_add(({T})b, ({T})0.5), bw), ({T})gw));
                if (!(xs >= -1 && xs <= ({T})W)) continue;
                {T} yy = tp_max(y, ({T})0);
                xs = tp_max(xs, ({T})0);
                int ylo = (int)yy, xlo = (int)xs, yhi, xhi;
                if (ylo >= H - 1) { ylo = yhi = H - 1; yy = ({T})ylo; } else { yhi = ylo + 1; }
                if (xlo >= W - 1) { xlo = xhi = W - 1; xs = ({T})xlo; } else { xhi = xlo + 1; }
                const {T} ly = tp_sub(yy, ({T})ylo), lx = tp_sub(xs, ({T})xlo);
                const {T} hy = tp_sub(({T})1, ly), hx = tp_sub(({T})1, lx);
                acc = tp_add(acc, tp_mul(tp_div(tp_mul(hy, hx), count), img[ylo * W + xlo]));
                acc = tp_add(acc, tp_mul(tp_div(tp_mul(hy, lx), count), img[ylo * W + xhi]));
                acc = tp_add(acc, tp_mul(tp_div(tp_mul(ly, hx), count), img[yhi * W + xlo]));
                acc = tp_add(acc, tp_mul(tp_div(tp_mul(ly, lx), count), img[yhi * W + xhi]));
            }
        }
    }
    out[e] = acc;
}
"""


def sources() -> dict:
    """{kernel name: CUDA source} of every RawKernel here."""
    out = {"tp_nms_greedy": _NMS_GREEDY}
    for c in _CTYPES.values():
        out[f"tp_nms_mask_{c}"] = _NMS_MASK.replace("{T}", c)
        out[f"tp_roi_align_{c}"] = _ROI_ALIGN.replace("{T}", c)
    return out


class VisionKernels:
    """nms and roi_align over array module `xp` (RawKernels when xp is CuPy); `native` is False
    where xp has no RawKernel, or to run the xp lowerings on CuPy (tests compare the two)."""

    def __init__(self, xp, table):
        self.xp = xp
        self.table = table
        self.native = hasattr(xp, "RawKernel")
        self._sources = sources()
        self._compiled = {}

    def _kernel(self, name):
        k = self._compiled.get(name)
        if k is None:
            k = self._compiled[name] = self.xp.RawKernel(self._sources[name], name)
        return k

    # -- nms ---------------------------------------------------------------------------------------
    def nms_mask(self, b, threshold):
        """uint64 (n, ceil(n / 64)): bit j % 64 of word (i, j // 64) set when j > i and
        IoU(b[i], b[j]) > threshold (b: (n, 4) boxes, C-contiguous)."""
        xp = self.xp
        n = b.shape[0]
        words = -(-n // _MASK_BITS)
        ct = _CTYPES.get(b.dtype.name)
        if self.native and ct is not None:
            mask = xp.zeros((n, words), dtype=np.uint64)
            self._kernel(f"tp_nms_mask_{ct}")((words, words), (_MASK_BITS,),
                                              (b, np.int32(n), b.dtype.type(threshold), np.int32(words), mask))
            return mask
        x1, y1, x2, y2 = (b[:, i] for i in range(4))
        area = (x2 - x1) * (y2 - y1)
        w = xp.maximum(xp.minimum(x2[:, None], x2) - xp.maximum(x1[:, None], x1), 0)
        h = xp.maximum(xp.minimum(y2[:, None], y2) - xp.maximum(y1[:, None], y1), 0)
        inter = w * h
        over = inter / (area[:, None] + area - inter) > b.dtype.type(threshold)
        upper = xp.arange(n)[None, :] > xp.arange(n)[:, None]
        bits = xp.zeros((n, words * _MASK_BITS), dtype=np.uint64)
        bits[:, :n] = xp.logical_and(over, upper).astype(np.uint64)
        shifts = xp.arange(_MASK_BITS, dtype=np.uint64)
        return xp.sum(bits.reshape(n, words, _MASK_BITS) << shifts, axis=2, dtype=np.uint64)

    def nms_greedy(self, mask, n):
        """uint8 (n,): 1 for the boxes the greedy pass over `mask` keeps."""
        xp = self.xp
        words = mask.shape[1]
        if self.native:
            keep = xp.zeros((n,), dtype=np.uint8)
            removed = xp.zeros((words,), dtype=np.uint64)
            self._kernel("tp_nms_greedy")((1,), (_GREEDY_THREADS,), (mask, np.int32(n), np.int32(words), removed, keep))
            return keep
        host = xp.asnumpy(mask)
        removed = np.zeros(words, dtype=np.uint64)
        keep = np.zeros(n, dtype=np.uint8)
        for i in range(n):
            if not (int(removed[i >> 6]) >> (i & 63)) & 1:
                keep[i] = 1
                removed |= host[i]
        return xp.asarray(keep)

    def nms(self, boxes, scores, iou_threshold):
        xp = self.xp
        n = boxes.shape[0]
        if n == 0:
            return xp.zeros((0,), dtype=np.int64)
        # decreasing score, ties by index, NaN last (the NumPy kernel's stable argsort of -scores)
        order = self.table()["argsort"](xp.negative(scores), 0, False, True)
        b = xp.ascontiguousarray(boxes[order])
        keep = self.nms_greedy(self.nms_mask(b, iou_threshold), n)
        return xp.ascontiguousarray(order[xp.nonzero(keep)[0]]).astype(np.int64, copy=False)

    # -- roi_align ---------------------------------------------------------------------------------
    def roi_align(self, x, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
        xp = self.xp
        N, C, H, W = x.shape
        R = rois.shape[0]
        ct = _CTYPES.get(x.dtype.name)
        if R == 0 or C == 0:
            return xp.zeros((R, C, pooled_h, pooled_w), dtype=x.dtype)
        if self.native and ct is not None and rois.dtype == x.dtype:
            x, rois = xp.ascontiguousarray(x), xp.ascontiguousarray(rois)
            out = xp.empty((R, C, pooled_h, pooled_w), dtype=x.dtype)
            total = out.size
            t = x.dtype.type
            self._kernel(f"tp_roi_align_{ct}")(
                (-(-total // _ROI_THREADS),), (_ROI_THREADS,),
                (x, rois, np.int64(total), np.int32(C), np.int32(H), np.int32(W), np.int32(pooled_h),
                 np.int32(pooled_w), t(spatial_scale), np.int32(sampling_ratio), np.int32(bool(aligned)), out))
            return out
        # the lowering, the NumPy kernel's: the sampling table on the host (it depends on the rois
        # only), one gather of the samples and their weighted sum on the device. Its skipped samples
        # are weight-0 reads of x[b, c, 0, 0]: where that is inf / NaN they give NaN (as torchvision's
        # CPU kernel does), which the RawKernel, skipping them as torchvision's CUDA kernel does, does not
        r = xp.asnumpy(rois)
        idx, wts = roi_align_table(r, H, W, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)
        P, M = idx.shape[1], idx.shape[2]
        flat = idx + (r[:, 0].astype(np.int64) * (H * W))[:, None, None]
        xt = xp.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(N * H * W, C)
        g = xt[xp.asarray(flat.reshape(-1))].reshape(R, P, M, C)
        w = xp.asarray(wts.astype(x.dtype).reshape(R, P, M, 1))
        out = xp.sum(g * w, axis=2)                                                 # (R, P, C)
        return xp.ascontiguousarray(out.transpose(0, 2, 1)).reshape(R, C, pooled_h, pooled_w)


def build(xp, table) -> dict:
    v = VisionKernels(xp, table)
    return {"nms": v.nms, "roi_align": v.roi_align}
