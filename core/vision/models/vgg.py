"""VGG (Simonyan & Zisserman, 2014): stacks of 3x3 convolutions (configurations A, B, D, E), with or
without batch norm, and a three-layer classifier; builders vgg11 ... vgg19_bn."""
from functools import partial
from typing import Any, Optional, Union

from tensorplug import Tensor, flatten, nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["VGG", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights",
           "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn",
           "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(flatten(self.avgpool(self.features(x)), 1))


def make_layers(cfg: list[Union[str, int]], batch_norm: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            conv = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            layers += [conv, nn.BatchNorm2d(v), nn.ReLU(inplace=True)] if batch_norm else \
                [conv, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


cfgs: dict[str, list[Union[str, int]]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def _vgg(cfg: str, batch_norm: bool, weights: Optional[WeightsEnum], progress: bool, **kwargs: Any) -> VGG:
    if weights is not None:
        kwargs["init_weights"] = False      # the loaded weights replace them anyway
        if weights.meta["categories"] is not None:
            _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
    if weights is not None:
        _load_weights(model, weights, progress)
    return model


_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg"


def _w(url, num_params, acc1, acc5, ops, size, recipe=_RECIPE, categories=_IMAGENET_CATEGORIES, **tf):
    return Weights(url=url, transforms=partial(ImageClassification, crop_size=224, **tf), meta={
        "min_size": (32, 32), "categories": categories, "recipe": recipe, "num_params": num_params,
        "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}, "_ops": ops, "_file_size": size})


_U = "https://download.pytorch.org/models/"


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg11-8a719046.pth", 132863336, 69.02, 88.628, 7.609, 506.84)
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg11_bn-6002323d.pth", 132868840, 70.37, 89.81, 7.609, 506.881)
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg13-19584684.pth", 133047848, 69.928, 89.246, 11.308, 507.545)
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg13_bn-abd245e5.pth", 133053736, 71.586, 90.374, 11.308, 507.59)
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg16-397923af.pth", 138357544, 71.592, 90.382, 15.47, 527.796)
    # ported from the SSD project: features only (no class names), inputs in [0, 255] minus the mean
    IMAGENET1K_FEATURES = _w(_U + "vgg16_features-amdegroot-88682ab5.pth", 138357544, float("nan"),
                             float("nan"), 15.47, 527.802, recipe="https://github.com/amdegroot/ssd.pytorch#training-ssd",
                             categories=None, mean=(0.48235, 0.45882, 0.40784),
                             std=(1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0))
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg16_bn-6c64b313.pth", 138365992, 73.36, 91.516, 15.47, 527.866)
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg19-dcbb9e9d.pth", 143667240, 72.376, 90.876, 19.632, 548.051)
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w(_U + "vgg19_bn-c79401a0.pth", 143678248, 74.218, 91.842, 19.632, 548.143)
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG11_Weights.IMAGENET1K_V1))
def vgg11(*, weights: Optional[VGG11_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 (configuration A)."""
    return _vgg("A", False, VGG11_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG11_BN_Weights.IMAGENET1K_V1))
def vgg11_bn(*, weights: Optional[VGG11_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 with batch norm."""
    return _vgg("A", True, VGG11_BN_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG13_Weights.IMAGENET1K_V1))
def vgg13(*, weights: Optional[VGG13_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 (configuration B)."""
    return _vgg("B", False, VGG13_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG13_BN_Weights.IMAGENET1K_V1))
def vgg13_bn(*, weights: Optional[VGG13_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 with batch norm."""
    return _vgg("B", True, VGG13_BN_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG16_Weights.IMAGENET1K_V1))
def vgg16(*, weights: Optional[VGG16_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 (configuration D)."""
    return _vgg("D", False, VGG16_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG16_BN_Weights.IMAGENET1K_V1))
def vgg16_bn(*, weights: Optional[VGG16_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 with batch norm."""
    return _vgg("D", True, VGG16_BN_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG19_Weights.IMAGENET1K_V1))
def vgg19(*, weights: Optional[VGG19_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 (configuration E)."""
    return _vgg("E", False, VGG19_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG19_BN_Weights.IMAGENET1K_V1))
def vgg19_bn(*, weights: Optional[VGG19_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 with batch norm."""
    return _vgg("E", True, VGG19_BN_Weights.verify(weights), progress, **kwargs)
