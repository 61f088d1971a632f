"""tensorplug.vision.transforms.functional against torchvision 0.29.1's results (fixtures/transforms_ref.npz,
made by fixtures/make_fixtures.py): geometry, colour, blur, AutoAugment ops, on PIL images and tensors."""
import json
import os
import warnings

import numpy as np
import pytest
from PIL import Image

import tensorplug as tp
import tensorplug.vision.transforms.autoaugment as A
import tensorplug.vision.transforms.functional as F
from tensorplug.vision.transforms import InterpolationMode as I

_REF = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "transforms_ref.npz"))
_CASES = json.loads(str(_REF["cases"]))
_RGB = _REF["rgb"]


def _input(kind):
    u8 = tp.from_numpy(_RGB.transpose(2, 0, 1).copy())
    return {"pil": lambda: Image.fromarray(_RGB, "RGB"), "pil_l": lambda: Image.fromarray(_RGB, "RGB").convert("L"),
            "u8": lambda: u8, "f32": lambda: u8.float() / 255, "b8": lambda: tp.stack([u8, u8.flip(-1)]),
            "g8": lambda: u8[:1].clone()}[kind]()


def _grid_u8(kind, expr):
    """uint8 tensors resampled bilinearly through a grid: the float32 grid may round a value that sits
    on .5 the other way (torchvision computes the same grid with a batched matmul)."""
    return kind in ("u8", "b8") and "BILINEAR" in expr and ("rotate" in expr or "affine" in expr or "Shear" in expr
                                                           or "Rotate" in expr or "Translate" in expr)


@pytest.mark.parametrize("name,kind,expr", _CASES, ids=[f"{k}:{e}" for _, k, e in _CASES])
def test_matches_torchvision(name, kind, expr):
    """The result equals torchvision's: exactly for integer images, to 1e-5 for float ones."""
    x = _input(kind)
    fill = [128, 64, 32] if kind == "pil" else [128.0, 64.0, 32.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = eval(expr, {"F": F, "A": A, "I": I, "torch": tp}, {"x": x, "FILL": fill})
    ref = _REF[name]
    if isinstance(out, Image.Image):
        assert kind.startswith("pil") or "to_pil_image" in expr
        got = np.asarray(out)
    else:
        assert isinstance(out, tp.Tensor)
        got = out.numpy()
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
    elif _grid_u8(kind, expr):
        diff = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        assert diff.max() <= 1 and (diff > 0).mean() < 0.01
    else:
        np.testing.assert_array_equal(got, ref)
