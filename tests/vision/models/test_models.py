"""tensorplug.vision.models against torchvision: state-dict layout, forward values, checkpoints."""
import json
import os

import numpy as np
import pytest

import tensorplug
from tensorplug.vision import models

from ._fill import fill_values, input_for

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(HERE, "models.json")) as _f:
    LAYOUT = json.load(_f)
ARCHS = sorted(LAYOUT)


def _entries(model):
    return [[k, list(v.shape), str(v.dtype).replace("tensorplug.", "")] for k, v in model.state_dict().items()]


def _filled(model, entries):
    vals = fill_values(entries)
    sd = {k: tensorplug.from_numpy(vals[k]) if k in vals else v for k, v in model.state_dict().items()}
    model.load_state_dict(sd, strict=True)
    return model.eval()


@pytest.fixture(scope="module")
def outputs():
    with np.load(os.path.join(HERE, "outputs.npz")) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture
def skip_init(monkeypatch):
    """Initialisers as no-ops: the forward test overwrites every value, and random init of VGG's
    100M-entry classifier would dominate the run."""
    from tensorplug.nn import init
    for name in ("kaiming_normal_", "kaiming_uniform_", "normal_", "uniform_", "constant_", "ones_", "zeros_"):
        monkeypatch.setattr(init, name, lambda t, *a, **k: t)


@pytest.mark.parametrize("arch", ARCHS)
def test_layout_and_forward_match_torchvision(arch, outputs, skip_init):
    """Keys, shapes and dtypes in torchvision's order; the parameter count the weights' meta
    records; eval output equal to torchvision's for the same values."""
    model = models.get_model(arch)
    assert _entries(model) == LAYOUT[arch]
    assert sum(p.numel() for p in model.parameters()) == models.get_model_weights(arch).DEFAULT.meta["num_params"]
    _filled(model, LAYOUT[arch])
    with tensorplug.no_grad():
        y = model(tensorplug.from_numpy(input_for(arch))).numpy()
    ref = outputs[arch]
    assert y.shape == ref.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=2e-4, atol=2e-4 * np.abs(ref).max())


def test_torch_saved_checkpoint_loads_strict():
    """A state dict torch.save wrote (zip format) loads with tensorplug.load and strict=True."""
    sd = tensorplug.load(os.path.join(HERE, "densenet_tiny.pth"))
    model = models.DenseNet(growth_rate=4, block_config=(1, 1, 1, 1), num_init_features=8, num_classes=10)
    result = model.load_state_dict(sd, strict=True)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    model.eval()
    with tensorplug.no_grad():
        y = model(tensorplug.from_numpy(input_for("densenet121"))).numpy()
    ref = np.load(os.path.join(HERE, "densenet_tiny_out.npy"))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_builder_arguments():
    """num_classes, zero_init_residual, width_mult, dropout and invalid arguments behave as torchvision's."""
    r = models.resnet18(num_classes=10, zero_init_residual=True)
    assert tuple(r.fc.weight.shape) == (10, 512)
    assert all(float(b.bn2.weight.abs().sum()) == 0 for layer in (r.layer1, r.layer4) for b in layer)
    assert float(r.bn1.weight.sum()) == 64 and float(r.bn1.bias.abs().sum()) == 0
    m = models.mobilenet_v2(width_mult=0.5, num_classes=3)
    assert m.features[0][0].out_channels == 16 and m.last_channel == 1280
    assert models.squeezenet1_1(dropout=0.25).classifier[0].p == 0.25
    with pytest.raises(ValueError, match="replace_stride_with_dilation"):
        models.resnet50(replace_stride_with_dilation=[True])
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        models.resnet18(groups=2)
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 2_0"):
        models.SqueezeNet("2_0")
    with pytest.raises(ValueError, match="Unknown model nosuchnet"):
        models.get_model("nosuchnet")
    with pytest.raises(ValueError, match="expected value 1000 but got 10"):
        models.resnet18(weights="DEFAULT", num_classes=10)


def test_init_statistics():
    """Kaiming-normal (fan_out) convolutions, N(0, 0.01) VGG linears, zero biases."""
    r = models.resnet50()
    w = r.layer3[0].conv2.weight.detach().numpy()        # 256 out channels, 3x3: fan_out = 2304
    assert abs(w.std() / np.sqrt(2.0 / 2304) - 1) < 0.02 and abs(w.mean()) < 1e-3
    v = models.vgg11()
    lw = v.classifier[6].weight.detach().numpy()
    assert abs(lw.std() / 0.01 - 1) < 0.02 and float(np.abs(v.classifier[6].bias.detach().numpy()).max()) == 0


def test_weights_api():
    """Enums, DEFAULT aliases, string forms, transforms presets, categories and the registry."""
    W = models.ResNet50_Weights
    assert W.DEFAULT is W.IMAGENET1K_V2 and repr(W.DEFAULT) == "ResNet50_Weights.IMAGENET1K_V2"
    assert W.verify("DEFAULT") is W.IMAGENET1K_V2 and W.verify("ResNet50_Weights.IMAGENET1K_V1") is W.IMAGENET1K_V1
    assert W.IMAGENET1K_V1.url == "https://download.pytorch.org/models/resnet50-0676ba61.pth"
    assert len(W.DEFAULT.meta["categories"]) == 1000 and W.DEFAULT.meta["categories"][0] == "tench"
    assert W.DEFAULT.meta["_metrics"]["ImageNet-1K"]["acc@1"] == 80.858
    t = W.DEFAULT.transforms()
    assert t.resize_size == [232] and t.crop_size == [224] and t.mean == [0.485, 0.456, 0.406]
    assert models.get_model_weights("resnet18") is models.ResNet18_Weights
    assert models.get_model_weights(models.densenet121) is models.DenseNet121_Weights
    assert models.get_weight("MobileNet_V2_Weights.DEFAULT") is models.MobileNet_V2_Weights.IMAGENET1K_V2
    assert models.list_models(include="resnet*") == ["resnet101", "resnet152", "resnet18", "resnet34", "resnet50"]
    assert set(ARCHS) <= set(models.list_models())
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received ResNet50_Weights"):
        models.resnet18(weights=W.DEFAULT)
    names = sorted(n for n in models.__dict__ if n.islower() and not n.startswith("__")
                   and callable(models.__dict__[n]))
    assert {"resnet18", "vgg16_bn", "alexnet", "densenet121"} <= set(names)


def test_preset_transform_values():
    """The preset on a uint8 tensor: antialiased resize of the shorter side, centre crop, normalize,
    against a float64 NumPy evaluation of the same filter (a 2:1 downscale averages with weights
    1/4, 3/4, 3/4, 1/4 over four pixels per output)."""
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, size=(3, 8, 12), dtype=np.uint8)
    t = models.ResNet18_Weights.DEFAULT.transforms()
    t.resize_size, t.crop_size = [4], [4]
    y = t(tensorplug.from_numpy(img)).numpy()
    k = np.zeros((4, 8))
    for i in range(4):
        for j, w in zip(range(2 * i - 1, 2 * i + 3), (0.25, 0.75, 0.75, 0.25)):
            if 0 <= j < 8:
                k[i, j] = w
    k /= k.sum(1, keepdims=True)
    kw = np.zeros((6, 12))
    for i in range(6):
        for j, w in zip(range(2 * i - 1, 2 * i + 3), (0.25, 0.75, 0.75, 0.25)):
            if 0 <= j < 12:
                kw[i, j] = w
    kw /= kw.sum(1, keepdims=True)
    r = np.clip(np.round(np.einsum("ih,chw,jw->cij", k, img.astype(np.float64), kw)), 0, 255)[:, :, 1:5] / 255
    mean, std = np.array([0.485, 0.456, 0.406])[:, None, None], np.array([0.229, 0.224, 0.225])[:, None, None]
    np.testing.assert_allclose(y, (r - mean) / std, rtol=1e-5, atol=1e-5)


def test_legacy_pretrained_argument(monkeypatch):
    """pretrained=False warns and builds untrained; pretrained=True means weights=DEFAULT-of-old (V1)."""
    with pytest.warns(UserWarning, match="'pretrained' is deprecated"):
        m = models.resnet18(pretrained=False)
    assert isinstance(m, models.ResNet)
    seen = []
    monkeypatch.setattr(models.resnet, "_load_weights", lambda model, w, progress: seen.append(w))
    with pytest.warns(UserWarning):
        models.resnet50(pretrained=True)
    assert seen == [models.ResNet50_Weights.IMAGENET1K_V1]


def test_missing_weights_file_gives_one_clear_error(tmp_path, monkeypatch):
    """Without network: one error naming the URL and the cache path to place the file at."""
    import urllib.request

    def offline(*a, **k):
        raise urllib.error.URLError("no route to host")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(OSError) as info:
        models.resnet18(weights=models.ResNet18_Weights.DEFAULT)
    msg = str(info.value)
    assert "https://download.pytorch.org/models/resnet18-f37072fd.pth" in msg
    assert str(tmp_path / "hub" / "checkpoints" / "resnet18-f37072fd.pth") in msg
    assert not list((tmp_path / "hub" / "checkpoints").iterdir())          # no partial file left


def test_cached_download_with_hash_check(tmp_path):
    """load_state_dict_from_url fetches (here a file:// URL) into model_dir, checks the SHA-256
    prefix in the name, then reads the cached copy; a wrong prefix is refused."""
    import hashlib
    import shutil
    src = os.path.join(HERE, "densenet_tiny.pth")
    digest = hashlib.sha256(open(src, "rb").read()).hexdigest()
    served = tmp_path / "srv"
    served.mkdir()
    good = served / f"densenet_tiny-{digest[:8]}.pth"
    bad = served / "densenet_tiny-00000000.pth"
    shutil.copy(src, good)
    shutil.copy(src, bad)
    cache = tmp_path / "cache"
    sd = models._api.load_state_dict_from_url(good.as_uri(), model_dir=str(cache), check_hash=True,
                                              progress=False)
    assert (cache / good.name).exists() and "classifier.weight" in sd
    np.testing.assert_array_equal(sd["classifier.bias"].numpy(),
                                  tensorplug.load(src)["classifier.bias"].numpy())
    with pytest.raises(RuntimeError, match="invalid hash value"):
        models._api.load_state_dict_from_url(bad.as_uri(), model_dir=str(cache), check_hash=True, progress=False)
    assert not (cache / bad.name).exists()


def test_densenet_old_checkpoint_keys_are_renamed():
    """The published DenseNet files say 'norm.1' where the modules are 'norm1': loading renames them."""
    sd = tensorplug.load(os.path.join(HERE, "densenet_tiny.pth"))
    old = {k.replace("norm1.", "norm.1.").replace("conv2.", "conv.2."): v for k, v in sd.items()
           if not k.endswith("num_batches_tracked")}          # (files that old have no such counters)
    assert "features.denseblock1.denselayer1.norm.1.weight" in old

    class FakeWeights:
        def get_state_dict(self, **kw):
            return dict(old)
    model = models.DenseNet(growth_rate=4, block_config=(1, 1, 1, 1), num_init_features=8, num_classes=10)
    models.densenet._load_state_dict(model, FakeWeights(), progress=False)
    np.testing.assert_array_equal(model.features.denseblock1.denselayer1.norm1.weight.detach().numpy(),
                                  sd["features.denseblock1.denselayer1.norm1.weight"].numpy())
