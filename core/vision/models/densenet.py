"""DenseNet (Huang et al., 2016): dense blocks where each layer sees every earlier layer's features,
joined by 1x1-conv + average-pool transitions; builders densenet121/161/169/201."""
import re
from collections import OrderedDict
from functools import partial
from typing import Any, Optional

from tensorplug import Tensor, cat, flatten, nn
from tensorplug.nn import functional as F

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _ovewrite_named_param, _with_bn_counters, handle_legacy_interface

__all__ = ["DenseNet", "DenseNet121_Weights", "DenseNet161_Weights", "DenseNet169_Weights",
           "DenseNet201_Weights", "densenet121", "densenet161", "densenet169", "densenet201"]


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: list[Tensor]) -> Tensor:
        return self.conv1(self.relu1(self.norm1(cat(inputs, 1))))

    def forward(self, input) -> Tensor:
        prev = [input] if isinstance(input, Tensor) else input
        if self.memory_efficient and self.training and any(t.requires_grad for t in prev):
            # recompute the concatenation in backward instead of keeping it
            from tensorplug.utils.checkpoint import checkpoint
            bottleneck = checkpoint(lambda *xs: self.bn_function(list(xs)), *prev, use_reentrant=False)
        else:
            bottleneck = self.bn_function(prev)
        new = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new = F.dropout(new, p=self.drop_rate, training=self.training)
        return new


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(self, num_layers: int, num_input_features: int, bn_size: int, growth_rate: int,
                 drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(num_input_features + i * growth_rate, growth_rate,
                                                              bn_size, drop_rate, memory_efficient))

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    def __init__(self, growth_rate: int = 32, block_config: tuple = (6, 12, 24, 16), num_init_features: int = 64,
                 bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))]))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(
                num_layers, num_features, bn_size, growth_rate, drop_rate, memory_efficient))
            num_features += num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(num_features, num_features // 2))
                num_features //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        out = F.adaptive_avg_pool2d(F.relu(self.features(x), inplace=True), (1, 1))
        return self.classifier(flatten(out, 1))


# The published checkpoints name the layers' modules "norm.1", "conv.2", ... (dots that newer
# module names do not allow): rename them to "norm1", "conv2" before loading.
_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _load_state_dict(model: nn.Module, weights: WeightsEnum, progress: bool) -> None:
    state_dict = weights.get_state_dict(progress=progress, check_hash=True)
    for key in list(state_dict.keys()):
        m = _OLD_KEY.match(key)
        if m:
            state_dict[m.group(1) + m.group(2)] = state_dict.pop(key)
    model.load_state_dict(_with_bn_counters(model, state_dict))


def _densenet(growth_rate: int, block_config: tuple, num_init_features: int, weights: Optional[WeightsEnum],
              progress: bool, **kwargs: Any) -> DenseNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = DenseNet(growth_rate, block_config, num_init_features, **kwargs)
    if weights is not None:
        _load_state_dict(model=model, weights=weights, progress=progress)
    return model


def _w(url, num_params, acc1, acc5, ops, size):
    return Weights(url=url, transforms=partial(ImageClassification, crop_size=224), meta={
        "min_size": (29, 29), "categories": _IMAGENET_CATEGORIES, "recipe": "https://github.com/pytorch/vision/pull/116",
        "num_params": num_params, "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}, "_ops": ops,
        "_file_size": size})


class DenseNet121_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w("https://download.pytorch.org/models/densenet121-a639ec97.pth", 7978856, 74.434, 91.972,
                       2.834, 30.845)
    DEFAULT = IMAGENET1K_V1


class DenseNet161_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w("https://download.pytorch.org/models/densenet161-8d451a50.pth", 28681000, 77.138, 93.56,
                       7.728, 110.369)
    DEFAULT = IMAGENET1K_V1


class DenseNet169_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w("https://download.pytorch.org/models/densenet169-b2777c0a.pth", 14149480, 75.6, 92.806,
                       3.36, 54.708)
    DEFAULT = IMAGENET1K_V1


class DenseNet201_Weights(WeightsEnum):
    IMAGENET1K_V1 = _w("https://download.pytorch.org/models/densenet201-c1103571.pth", 20013928, 76.896, 93.37,
                       4.291, 77.373)
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet121_Weights.IMAGENET1K_V1))
def densenet121(*, weights: Optional[DenseNet121_Weights] = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-121 (growth 32, blocks 6/12/24/16)."""
    return _densenet(32, (6, 12, 24, 16), 64, DenseNet121_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet161_Weights.IMAGENET1K_V1))
def densenet161(*, weights: Optional[DenseNet161_Weights] = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-161 (growth 48, blocks 6/12/36/24)."""
    return _densenet(48, (6, 12, 36, 24), 96, DenseNet161_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet169_Weights.IMAGENET1K_V1))
def densenet169(*, weights: Optional[DenseNet169_Weights] = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-169 (growth 32, blocks 6/12/32/32)."""
    return _densenet(32, (6, 12, 32, 32), 64, DenseNet169_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet201_Weights.IMAGENET1K_V1))
def densenet201(*, weights: Optional[DenseNet201_Weights] = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-201 (growth 32, blocks 6/12/48/32)."""
    return _densenet(32, (6, 12, 48, 32), 64, DenseNet201_Weights.verify(weights), progress, **kwargs)
