"""transforms.v2: the same numerics as the classic API for plain images, whole samples (image + label,
dicts) with shared random parameters, ToImage / ToDtype / ToPureTensor / Identity, and the torchvision
names under `tensorplug exec`."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

import tensorplug as tp
import tensorplug.vision.transforms as T
import tensorplug.vision.transforms.functional as F
from tensorplug.vision.transforms import v2


def _pil(seed=0):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (10, 12, 3), dtype=np.uint8))


def test_to_image_to_dtype():
    """ToImage keeps uint8 (C, H, W); ToDtype(scale=True) rescales to [0, 1] like ToTensor."""
    img = _pil()
    x = v2.ToImage()(img)
    assert x.dtype == tp.uint8 and tuple(x.shape) == (3, 10, 12)
    np.testing.assert_array_equal(x.numpy(), np.asarray(img).transpose(2, 0, 1))
    y = v2.ToDtype(tp.float32, scale=True)(x)
    np.testing.assert_allclose(y.numpy(), T.ToTensor()(img).numpy(), atol=1e-7)
    assert v2.ToDtype(tp.float32)(x).max().item() > 1.0                     # no scaling without scale=True
    assert v2.ToDtype({tp.Tensor: tp.float64, "others": None})(x).dtype == tp.float64
    np.testing.assert_array_equal(v2.ToImage()(np.asarray(img)).numpy(), x.numpy())
    assert v2.ToPureTensor()(x) is x and v2.Identity()(x) is x


def test_same_results_as_classic():
    """A seeded v2 pipeline equals the classic one with the same seed."""
    img = _pil(1)
    classic = T.Compose([T.RandomResizedCrop(6), T.RandomHorizontalFlip(), T.ColorJitter(0.3, 0.3, 0.3, 0.05),
                         T.PILToTensor(), T.ConvertImageDtype(tp.float32), T.Normalize([0.5] * 3, [0.2] * 3)])
    new = v2.Compose([v2.RandomResizedCrop(6), v2.RandomHorizontalFlip(), v2.ColorJitter(0.3, 0.3, 0.3, 0.05),
                      v2.ToImage(), v2.ToDtype(tp.float32, scale=True), v2.Normalize([0.5] * 3, [0.2] * 3)])
    tp.manual_seed(3)
    a = classic(img)
    tp.manual_seed(3)
    b = new(img)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(v2.functional.resize(a, [3, 4]).numpy(), F.resize(a, [3, 4]).numpy())


def test_samples_pass_labels_through_and_share_parameters():
    """(image, label) and dict samples keep their structure; all images get the same random crop."""
    x = v2.ToImage()(_pil(2))
    t = v2.Compose([v2.RandomCrop(5), v2.RandomHorizontalFlip(0.5)])
    tp.manual_seed(0)
    img, label = t(x, 7)
    assert label == 7 and tuple(img.shape) == (3, 5, 5)
    out = t({"image": x, "label": 3, "path": "a.png"})
    assert out["label"] == 3 and out["path"] == "a.png" and tuple(out["image"].shape) == (3, 5, 5)
    for _ in range(10):
        a, b = v2.RandomCrop(4)(x, x.clone())
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(TypeError, match="found no image"):
        v2.RandomCrop(4)(3)


def test_v2_are_modules_and_containers():
    seq = tp.nn.Sequential(v2.Resize(4), v2.CenterCrop(3))
    assert tuple(seq(tp.rand(3, 8, 10)).shape) == (3, 3, 3)
    assert isinstance(v2.Compose([v2.Identity()]), tp.nn.Module) and isinstance(v2.ToTensor(), tp.nn.Module)
    tp.manual_seed(1)
    res = [v2.RandomApply([v2.Lambda(lambda v: v + 1)], p=0.3)(tp.zeros(1)).item() for _ in range(1000)]
    assert abs(np.mean(res) - 0.3) < 0.05
    assert v2.RandomChoice([v2.Lambda(lambda v: v * 2)])(tp.ones(1)).item() == 2.0
    assert v2.functional.get_size(tp.rand(3, 4, 5)) == [4, 5]


def test_torchvision_names_under_exec(tmp_path):
    """`tensorplug exec` runs a script importing torchvision.transforms (and .v2 / .functional)."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torchvision.transforms as transforms
        import torchvision.transforms.functional as TF
        from torchvision.transforms import v2
        t = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
        import numpy as np
        x = t(np.full((4, 4, 1), 255, dtype=np.uint8))
        y = v2.Compose([v2.ToDtype(torch.float32, scale=True)])(torch.full((1, 2, 2), 255, dtype=torch.uint8))
        print(round(float(x.mean()), 4), tuple(TF.hflip(x).shape), float(y.max()), transforms.InterpolationMode.BICUBIC.value)
    """))
    exe = [sys.executable, "-m", "tensorplug", "exec", str(script)]
    out = subprocess.run(exe, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(round((1 - 0.1307) / 0.3081, 4)), "(1,", "4,", "4)", "1.0", "bicubic"]
