"""tensorplug.vision.ops: boxes, nms and roi_align against torchvision's values (fixtures/ops.npz,
made by fixtures/make_ops.py) and float64 NumPy references; roi_align gradients by finite differences."""
import os

import numpy as np
import pytest

import tensorplug
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.dispatch import optional_vision
from tensorplug.vision import ops

with np.load(os.path.join(os.path.dirname(__file__), "fixtures", "ops.npz")) as _z:
    FIX = {k: _z[k] for k in _z.files}
CASES = [((3, 3), 1.0, -1, False), ((2, 4), 0.5, 2, True), ((4, 4), 0.25, -1, True), ((2, 2), 1.0, 0, False),
         ((3, 2), 0.5, 3, False)]
T = tensorplug.from_numpy


@pytest.mark.parametrize("i", range(len(CASES)))
def test_roi_align_matches_torchvision(i):
    """Values and input gradients of roi_align equal torchvision's (native kernel and decomposition)."""
    size, scale, ratio, aligned = CASES[i]
    x = T(FIX["x"]).requires_grad_()
    y = ops.roi_align(x, T(FIX["rois"]), size, scale, ratio, aligned)
    np.testing.assert_allclose(y.detach().numpy(), FIX[f"roi_align_{i}"], rtol=1e-5, atol=1e-6)
    y.backward(T(_grad_out(size)))
    np.testing.assert_allclose(x.grad.numpy(), FIX[f"roi_align_grad_{i}"], rtol=1e-5, atol=1e-5)
    K = x._k
    dec = optional_vision.roi_align(K, FIX["x"], FIX["rois"], scale, size[0], size[1], ratio, aligned)
    np.testing.assert_allclose(np.asarray(K["to_numpy"](dec)), FIX[f"roi_align_{i}"], rtol=1e-5, atol=1e-6)


def _grad_out(size):
    # the fixture script's output gradient: its fifth draw from the seeded generator, sliced to the size
    rng = np.random.default_rng(11)
    rng.standard_normal((2, 3, 10, 12))
    rng.uniform(-3, 11, size=(7, 2))
    rng.uniform(0.3, 9, size=(7, 2))
    rng.integers(0, 2, size=(7, 1))
    g = rng.standard_normal((7, 3, 4, 4)).astype(np.float32)
    return np.ascontiguousarray(g[:, :, :size[0], :size[1]])


def test_roi_align_gradients_by_finite_differences():
    """gradcheck and gradgradcheck in float64, adaptive and fixed sampling, both alignments."""
    rng = np.random.default_rng(0)
    x = T(rng.standard_normal((2, 2, 5, 6))).requires_grad_()
    rois = T(np.array([[0, 0.3, 0.6, 4.1, 3.7], [1, -0.8, 1.1, 2.2, 5.9], [1, 1.0, 1.0, 1.4, 1.2]]))
    for ratio, aligned in ((-1, True), (2, False)):
        f = lambda t: ops.roi_align(t, rois, (2, 3), 0.9, ratio, aligned)  # noqa: E731
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))


def test_roi_align_box_list_and_module():
    """A list of per-image (L, 4) boxes means the same as (K, 5) rows; RoIAlign is the module form."""
    x = T(FIX["x"])
    rois = FIX["rois"]
    per_image = [T(rois[rois[:, 0] == b, 1:].copy()) for b in (0, 1)]
    order = np.argsort(rois[:, 0], kind="stable")
    y = ops.roi_align(x, per_image, 3, 1.0, -1, False)
    np.testing.assert_allclose(y.numpy(), FIX["roi_align_0"][order], rtol=1e-5, atol=1e-6)
    m = ops.RoIAlign((3, 3), spatial_scale=1.0, sampling_ratio=-1)
    np.testing.assert_allclose(m(x, T(rois)).numpy(), FIX["roi_align_0"], rtol=1e-5, atol=1e-6)


def test_roi_align_errors():
    x = T(FIX["x"])
    with pytest.raises(AssertionError, match=r"Tensor\[K, 5\]"):
        ops.roi_align(x, T(np.zeros((2, 4), np.float32)), 2)
    with pytest.raises(AssertionError, match=r"List\[Tensor\[L, 4\]\]"):
        ops.roi_align(x, [T(np.zeros((2, 5), np.float32))], 2)
    with pytest.raises(IndexError, match=r"image indices"):
        ops.roi_align(x, T(np.array([[2, 0, 0, 1, 1]], np.float32)), 2)
    with pytest.raises(RuntimeError, match="4-d"):
        ops.roi_align(x[0], T(FIX["rois"]), 2)


@pytest.mark.parametrize("thr", (0.3, 0.5, 0.7))
def test_nms_and_batched_nms_match_torchvision(thr):
    """Kept indices (order included, tied scores among them) equal torchvision's; so does the
    decomposition run on the same kernel table."""
    boxes, scores = T(FIX["boxes"]), T(FIX["scores"])
    keep = ops.nms(boxes, scores, thr)
    assert keep.dtype == tensorplug.int64
    np.testing.assert_array_equal(keep.numpy(), FIX[f"nms_{thr}"])
    K = boxes._k
    np.testing.assert_array_equal(np.asarray(optional_vision.nms(K, FIX["boxes"], FIX["scores"], thr)),
                                  FIX[f"nms_{thr}"])
    kb = ops.batched_nms(boxes, scores, T(FIX["idxs"]), thr)
    np.testing.assert_array_equal(kb.numpy(), FIX[f"batched_nms_{thr}"])


def test_nms_edge_cases_and_errors():
    e = ops.nms(T(np.zeros((0, 4), np.float32)), T(np.zeros(0, np.float32)), 0.5)
    assert e.shape == (0,) and e.dtype == tensorplug.int64
    assert ops.batched_nms(T(np.zeros((0, 4), np.float32)), T(np.zeros(0, np.float32)),
                           T(np.zeros(0, np.int64)), 0.5).shape == (0,)
    with pytest.raises(RuntimeError, match="4 elements in dimension 1, got 5"):
        ops.nms(T(np.zeros((3, 5), np.float32)), T(np.zeros(3, np.float32)), 0.5)
    with pytest.raises(RuntimeError, match="same number of elements in dimension 0, got 3 and 2"):
        ops.nms(T(np.zeros((3, 4), np.float32)), T(np.zeros(2, np.float32)), 0.5)
    with pytest.raises(TypeError):
        ops.nms(np.zeros((3, 4)), T(np.zeros(3, np.float32)), 0.5)


def _ref_iou(a, b):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    area = lambda z: (z[:, 2] - z[:, 0]) * (z[:, 3] - z[:, 1])  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    lti, rbi = np.minimum(a[:, None, :2], b[None, :, :2]), np.maximum(a[:, None, 2:], b[None, :, 2:])
    encl = np.prod(np.clip(rbi - lti, 0, None), -1)
    return inter / union, inter / union - (encl - union) / encl


def test_box_iou_area_and_giou():
    """Against float64 NumPy references."""
    a, b = FIX["boxes"][:9].astype(np.float64), FIX["boxes"][40:45].astype(np.float64)
    iou, giou = _ref_iou(a, b)
    np.testing.assert_allclose(ops.box_iou(T(a), T(b)).numpy(), iou, rtol=1e-12)
    np.testing.assert_allclose(ops.generalized_box_iou(T(a), T(b)).numpy(), giou, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ops.box_area(T(a)).numpy(), (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]), rtol=1e-15)


def test_box_convert_clip_and_remove_small():
    xyxy = np.array([[1.0, 2.0, 5.0, 10.0], [-3.0, 4.0, 0.0, 4.5]])
    xywh = np.array([[1.0, 2.0, 4.0, 8.0], [-3.0, 4.0, 3.0, 0.5]])
    cxcywh = np.array([[3.0, 6.0, 4.0, 8.0], [-1.5, 4.25, 3.0, 0.5]])
    forms = {"xyxy": xyxy, "xywh": xywh, "cxcywh": cxcywh}
    for fi, vi in forms.items():
        for fo, vo in forms.items():
            np.testing.assert_array_equal(ops.box_convert(T(vi), fi, fo).numpy(), vo)
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        ops.box_convert(T(xyxy), "xyxy", "yxyx")
    clipped = ops.clip_boxes_to_image(T(xyxy), (6, 4)).numpy()
    np.testing.assert_array_equal(clipped, [[1.0, 2.0, 4.0, 6.0], [0.0, 4.0, 0.0, 4.5]])
    keep = ops.remove_small_boxes(T(xyxy), 0.5)
    assert keep.dtype == tensorplug.int64 and keep.tolist() == [0, 1]
    assert ops.remove_small_boxes(T(xyxy), 0.6).tolist() == [0]
