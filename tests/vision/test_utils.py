"""tensorplug.vision.utils: make_grid and save_image against torchvision 0.29.1's results (fixtures)."""
import io
import pathlib

import numpy as np
import pytest

import tensorplug
from tensorplug.autograd import gradcheck
from tensorplug.vision import utils

PIL = pytest.importorskip("PIL.Image")
FIX = np.load(pathlib.Path(__file__).parent / "fixtures" / "utils_grid.npz")
CASES = {
    "default": ("batch", {}),
    "nrow2_pad1_value": ("batch", {"nrow": 2, "padding": 1, "pad_value": 0.5}),
    "normalize": ("batch", {"normalize": True}),
    "normalize_range": ("batch", {"normalize": True, "value_range": (-0.5, 0.5), "nrow": 3}),
    "normalize_each": ("batch", {"normalize": True, "scale_each": True, "padding": 0}),
    "gray_nrow3": ("gray", {"nrow": 3, "padding": 3}),
    "single": ("single", {}),
    "plane": ("plane", {}),
    "unit_nrow4": ("unit", {"nrow": 4, "pad_value": 1.0}),
}


@pytest.mark.parametrize("name", CASES)
def test_make_grid_matches_torchvision(name):
    """Layout, padding, channel repetition and normalisation equal torchvision's grid exactly."""
    src, kwargs = CASES[name]
    x = tensorplug.from_numpy(FIX[f"in_{src}"].copy())
    before = x.numpy().copy()
    grid = utils.make_grid(x, **kwargs)
    expected = FIX[f"grid_{name}"]
    assert tuple(grid.shape) == expected.shape and grid.dtype == x.dtype
    np.testing.assert_allclose(grid.numpy(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(x.numpy(), before)           # normalize works on a copy


def test_make_grid_of_a_list_equals_the_stacked_batch():
    """A list of (C, H, W) images is the batch they stack to."""
    batch = FIX["in_batch"]
    grid = utils.make_grid([tensorplug.from_numpy(b.copy()) for b in batch], nrow=2, padding=1, pad_value=0.5)
    np.testing.assert_array_equal(grid.numpy(), FIX["grid_nrow2_pad1_value"])


def test_make_grid_passes_gradients():
    """The grid is built from tensor ops: its gradient is a gather of the images' (finite differences)."""
    x = tensorplug.from_numpy(np.random.RandomState(1).rand(3, 1, 2, 3)).requires_grad_()
    assert gradcheck(lambda t: utils.make_grid(t, nrow=2, padding=1), (x,))


def test_make_grid_rejects_bad_input():
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        utils.make_grid(np.zeros((2, 3, 4, 4)))
    with pytest.raises(TypeError, match="a list containing"):
        utils.make_grid([tensorplug.zeros(3, 2, 2), 5])
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(tensorplug.zeros(2, 3, 2, 2), normalize=True, value_range=[0, 1])
    with pytest.raises(ValueError, match="2 to 4 dimensions"):
        utils.make_grid(tensorplug.zeros(1, 2, 3, 2, 2))


@pytest.mark.parametrize("name,src,kwargs", [("unit", "unit", {"nrow": 2}),
                                             ("batch_norm", "batch", {"normalize": True})])
def test_save_image_writes_torchvisions_pixels(tmp_path, name, src, kwargs):
    """save_image rounds and clamps as torchvision does: the PNG's pixels are torchvision's, to a file
    name or a file object with a format."""
    x = tensorplug.from_numpy(FIX[f"in_{src}"].copy())
    path = tmp_path / "grid.png"
    utils.save_image(x, path, **kwargs)
    np.testing.assert_array_equal(np.asarray(PIL.open(path)), FIX[f"saved_{name}"])
    buf = io.BytesIO()
    utils.save_image(x, buf, format="png", **kwargs)
    np.testing.assert_array_equal(np.asarray(PIL.open(io.BytesIO(buf.getvalue()))), FIX[f"saved_{name}"])
