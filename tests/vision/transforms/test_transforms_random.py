"""Random transforms: parameters drawn from tensorplug's RNG (reproducible under manual_seed) with the
distributions torchvision documents; transforms as nn.Modules; gradients through tensor transforms;
clear errors for bad input."""
import math

import numpy as np
import pytest
from PIL import Image

import tensorplug as tp
import tensorplug.vision.transforms as T
import tensorplug.vision.transforms.functional as F
from tensorplug.autograd import gradcheck


def _pil(h=12, w=16, seed=0):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))


PIPELINE = [T.RandomResizedCrop(8), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
            T.RandomRotation(20), T.RandomAffine(10, (0.1, 0.1), (0.9, 1.1), 5), T.RandomGrayscale(0.5),
            T.GaussianBlur(3), T.AutoAugment(), T.RandAugment(), T.TrivialAugmentWide()]


@pytest.mark.parametrize("kind", ["pil", "tensor"])
def test_manual_seed_reproduces_a_random_pipeline(kind):
    """The same seed gives the same output; another seed a different one."""
    img = _pil() if kind == "pil" else F.pil_to_tensor(_pil())
    t = T.Compose(PIPELINE + ([T.ToTensor()] if kind == "pil" else [T.ConvertImageDtype(tp.float32)])
                  + [T.RandomErasing(p=1.0, value="random")])
    outs = []
    for seed in (5, 5, 6):
        tp.manual_seed(seed)
        outs.append(t(img).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[0].shape == (3, 8, 8)
    assert not np.array_equal(outs[0], outs[2])


def test_flip_probability():
    """RandomHorizontalFlip(p) flips a fraction p of the draws (binomial, 5 sigma)."""
    tp.manual_seed(0)
    x = tp.tensor([[[1.0, 2.0]]])
    n, p = 4000, 0.3
    flips = sum(float(T.RandomHorizontalFlip(p)(x)[0, 0, 0]) == 2.0 for _ in range(n))
    assert abs(flips / n - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert float(T.RandomVerticalFlip(1.0)(tp.tensor([[[1.0], [2.0]]]))[0, 0, 0]) == 2.0


def test_random_resized_crop_params():
    """Boxes fit the image, their area fraction lies in scale (up to rounding) and is ~uniform,
    their aspect ratio lies in ratio."""
    tp.manual_seed(1)
    img = tp.zeros(1, 200, 200)
    fr, ar = [], []
    for _ in range(1000):
        i, j, h, w = T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3))
        assert 0 <= i <= 200 - h and 0 <= j <= 200 - w and h > 0 and w > 0
        fr.append(h * w / 200 ** 2)
        ar.append(w / h)
    fr = np.array(fr)
    assert fr.min() > 0.07 and fr.max() <= 1.0
    # U(0.08, 1) areas, but boxes that do not fit are drawn again: torchvision's mean is 0.478 (20000 draws)
    assert abs(fr.mean() - 0.478) < 0.03
    assert min(ar) > 0.74 and max(ar) < 1.35
    # a ratio the image cannot give falls back to the central crop of the nearest ratio
    assert T.RandomResizedCrop.get_params(tp.zeros(1, 10, 100), (0.99, 1.0), (1.0, 1.0)) == (0, 45, 10, 10)


def test_random_crop_offsets_uniform():
    """RandomCrop draws each offset uniformly; padding and pad_if_needed make room first."""
    tp.manual_seed(2)
    counts = np.zeros(4)
    for _ in range(2000):
        i, j, h, w = T.RandomCrop.get_params(tp.zeros(1, 5, 7), (2, 7))
        assert (j, h, w) == (0, 2, 7)
        counts[i] += 1
    assert np.all(np.abs(counts / 2000 - 0.25) < 0.04)
    out = T.RandomCrop(6, pad_if_needed=True, fill=9)(tp.zeros(1, 4, 4, dtype=tp.uint8))
    assert tuple(out.shape) == (1, 6, 6) and int(out.sum()) == 9 * (36 - 16)
    assert tuple(T.RandomCrop(4, padding=2)(tp.zeros(1, 3, 3)).shape) == (1, 4, 4)


def test_color_jitter_params():
    """Factors are drawn in the requested ranges, the order is a permutation of the four ops."""
    tp.manual_seed(3)
    cj = T.ColorJitter(brightness=0.5, contrast=(0.2, 0.3), saturation=0, hue=0.25)
    assert cj.saturation is None and cj.contrast == (0.2, 0.3) and cj.hue == (-0.25, 0.25)
    bs, hs = [], []
    for _ in range(500):
        order, b, c, s, h = T.ColorJitter.get_params(cj.brightness, cj.contrast, cj.saturation, cj.hue)
        assert sorted(order.tolist()) == [0, 1, 2, 3] and s is None and 0.2 <= c <= 0.3
        bs.append(b)
        hs.append(h)
    assert 0.5 <= min(bs) and max(bs) <= 1.5 and abs(np.mean(bs) - 1.0) < 0.05
    assert -0.25 <= min(hs) and max(hs) <= 0.25 and abs(np.mean(hs)) < 0.03


def test_rotation_affine_blur_params():
    """Angles, translations, scales, shears and sigmas lie in their ranges, roughly uniformly."""
    tp.manual_seed(4)
    angles = [T.RandomRotation.get_params([-30.0, 30.0]) for _ in range(1000)]
    assert -30 <= min(angles) < -28 and 28 < max(angles) <= 30 and abs(np.mean(angles)) < 1.5
    for _ in range(300):
        a, (tx, ty), s, (sx, sy) = T.RandomAffine.get_params([-5, 5], [0.2, 0.1], [0.8, 1.2], [-3, 3, 1, 2], [50, 40])
        assert -5 <= a <= 5 and abs(tx) <= 10 and abs(ty) <= 4 and 0.8 <= s <= 1.2
        assert -3 <= sx <= 3 and 1 <= sy <= 2
        assert 0.1 <= T.GaussianBlur.get_params(0.1, 2.0) <= 2.0


def test_random_erasing():
    """p=1 erases one box with the value (inside the image), p=0 leaves the image alone."""
    tp.manual_seed(5)
    x = tp.ones(3, 20, 20)
    out = T.RandomErasing(p=1.0, value=(0.0, 0.5, 2.0))(x)
    diff = (out != x).numpy()
    assert diff.any() and diff[0].sum() == diff[2].sum()
    np.testing.assert_array_equal(out.numpy()[2][diff[2]], 2.0)
    rows, cols = np.nonzero(diff[0])
    assert diff[0].sum() == (rows.max() - rows.min() + 1) * (cols.max() - cols.min() + 1)    # a box
    assert T.RandomErasing(p=0.0)(x) is x
    assert T.RandomErasing(p=1.0, inplace=True)(x) is x


def test_random_choice_order_apply():
    """RandomChoice follows p; RandomOrder applies every transform once; RandomApply applies all or none."""
    tp.manual_seed(6)
    add1, mul2 = T.Lambda(lambda v: v + 1), T.Lambda(lambda v: v * 2)
    picks = [T.RandomChoice([add1, mul2], p=[0.8, 0.2])(3) for _ in range(1000)]
    assert set(picks) == {4, 6} and abs(picks.count(4) / 1000 - 0.8) < 0.05
    outs = {T.RandomOrder([add1, mul2])(3) for _ in range(50)}
    assert outs == {8, 7}                           # (3 + 1) * 2 and 3 * 2 + 1
    applied = [T.RandomApply([add1, mul2], p=0.25)(3) for _ in range(1000)]
    assert set(applied) == {3, 8} and abs(applied.count(8) / 1000 - 0.25) < 0.05


def test_random_op_wrappers():
    x = F.pil_to_tensor(_pil())
    for t, f in [(T.RandomInvert(1.0), F.invert), (T.RandomEqualize(1.0), F.equalize),
                 (T.RandomAutocontrast(1.0), F.autocontrast), (T.RandomPosterize(2, 1.0), lambda v: F.posterize(v, 2)),
                 (T.RandomSolarize(90, 1.0), lambda v: F.solarize(v, 90)),
                 (T.RandomAdjustSharpness(3, 1.0), lambda v: F.adjust_sharpness(v, 3))]:
        np.testing.assert_array_equal(t(x).numpy(), f(x).numpy())
        assert type(t)(*([] if not hasattr(t, "bits") and not hasattr(t, "threshold")
                         and not hasattr(t, "sharpness_factor") else [2]), p=0.0)(x) is x


def test_autoaugment_policies():
    """Each policy has 25 two-op sub-policies; the transforms keep PIL images PIL and the tensor dtype."""
    for policy in T.AutoAugmentPolicy:
        aa = T.AutoAugment(policy)
        assert len(aa.policies) == 25 and all(len(sp) == 2 for sp in aa.policies)
    assert T.AutoAugment().policies[0] == (("Posterize", 0.4, 8), ("Rotate", 0.6, 9))
    tp.manual_seed(7)
    img = _pil()
    for t in (T.AutoAugment(T.AutoAugmentPolicy.CIFAR10), T.RandAugment(num_ops=3), T.TrivialAugmentWide()):
        assert isinstance(t(img), Image.Image) and t(img).size == img.size
        y = t(F.pil_to_tensor(img))
        assert y.dtype == tp.uint8 and tuple(y.shape) == (3, 12, 16)


def test_modules_nest_in_sequential():
    """Tensor transforms are nn.Modules, as in torchvision, so nn.Sequential chains them."""
    seq = tp.nn.Sequential(T.Resize((6, 8)), T.CenterCrop(4), T.Normalize([0.5], [0.25]))
    x = tp.rand(1, 12, 16)
    expect = (F.center_crop(F.resize(x, [6, 8]), [4, 4]) - 0.5) / 0.25
    np.testing.assert_allclose(seq(x).numpy(), expect.numpy(), atol=1e-6)
    assert isinstance(T.RandomCrop(3), tp.nn.Module) and not isinstance(T.ToTensor(), tp.nn.Module)
    assert [c.shape for c in T.TenCrop(4)(tp.rand(1, 8, 8))] == [tp.Size([1, 4, 4])] * 10


@pytest.mark.parametrize("fn", [
    lambda x: F.normalize(x, [0.4, 0.5, 0.6], [0.2, 0.3, 0.4]),
    lambda x: F.resize(x, [3, 4]),                              # antialiased shrink
    lambda x: F.resize(x, [7, 9], antialias=False),
    lambda x: F.affine(x, 20.0, [1, 0], 1.1, [5.0, 0.0], T.InterpolationMode.BILINEAR, fill=[0.5, 0.1, 0.2]),
    lambda x: F.gaussian_blur(x, 3, 0.8),
    lambda x: F.adjust_contrast(F.adjust_brightness(x, 1.2), 0.7),
], ids=["normalize", "resize_aa", "resize", "affine", "blur", "brightness_contrast"])
def test_gradients_flow(fn):
    """Float-tensor transforms are differentiable: autograd matches finite differences."""
    x = tp.rand(3, 5, 6, dtype=tp.float64) * 0.8 + 0.1
    x.requires_grad_(True)
    assert gradcheck(fn, (x,))


def test_bad_input_errors():
    """Wrong kinds of input and bad arguments raise TypeError/ValueError naming the problem."""
    x = tp.rand(3, 4, 4)
    cases = [
        (TypeError, "PIL Image or Tensor", lambda: F.resize([[1, 2]], 2)),
        (TypeError, "pic should be PIL Image or ndarray", lambda: T.ToTensor()("a.png")),
        (TypeError, "float tensor", lambda: F.normalize(tp.zeros(3, 2, 2, dtype=tp.uint8), [0.0], [1.0])),
        (ValueError, "std evaluated to zero", lambda: F.normalize(x, [0.0], [0.0])),
        (ValueError, "brightness_factor", lambda: F.adjust_brightness(x, -1)),
        (ValueError, "hue_factor", lambda: F.adjust_hue(x, 0.7)),
        (ValueError, "Padding mode", lambda: F.pad(x, 1, padding_mode="wrap")),
        (ValueError, "Padding must be", lambda: F.pad(x, [1, 2, 3])),
        (ValueError, "larger than input image size", lambda: T.RandomCrop(9)(x)),
        (ValueError, "kernel_size should have odd", lambda: F.gaussian_blur(x, 4)),
        (ValueError, "> 4 channels", lambda: F.to_pil_image(tp.rand(5, 2, 2))),
        (TypeError, "Size should be int or sequence", lambda: T.Resize("big")),
        (TypeError, "Tensor image", lambda: T.RandomErasing(p=1.0)(_pil())),
        (TypeError, "uint8", lambda: F.equalize(x)),
        (TypeError, "permitted channel values", lambda: F.adjust_saturation(tp.rand(2, 3, 3), 0.5)),
        (TypeError, "Tensor is not a torch image", lambda: F.hflip(tp.rand(4))),
        (TypeError, "InterpolationMode", lambda: F.resize(x, 2, interpolation="cubic-ish")),
        (ValueError, "fill", lambda: F.rotate(x, 10.0, fill=[1.0, 2.0])),
        (ValueError, "Interpolation mode 'bicubic' is unsupported", lambda: F.rotate(x, 10.0, 3)),
    ]
    for exc, text, call in cases:
        with pytest.raises(exc, match=text):
            call()
