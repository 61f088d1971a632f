"""Building blocks the models share: convolution + normalization + activation as one Sequential."""
from typing import Callable, Optional, Union

from tensorplug import nn

__all__ = ["Conv2dNormActivation", "Conv3dNormActivation"]


class ConvNormActivation(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None,
                 groups: int = 1, norm_layer: Optional[Callable[..., nn.Module]] = nn.BatchNorm2d,
                 activation_layer: Optional[Callable[..., nn.Module]] = nn.ReLU, dilation=1,
                 inplace: Optional[bool] = True, bias: Optional[bool] = None,
                 conv_layer: Callable[..., nn.Module] = nn.Conv2d) -> None:
        if padding is None:         # "same" padding for odd kernels
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                n = len(kernel_size) if isinstance(kernel_size, (list, tuple)) else len(dilation)
                ks = kernel_size if isinstance(kernel_size, (list, tuple)) else (kernel_size,) * n
                dl = dilation if isinstance(dilation, (list, tuple)) else (dilation,) * n
                padding = tuple((k - 1) // 2 * d for k, d in zip(ks, dl))
        if bias is None:            # a following norm layer makes a conv bias redundant
            bias = norm_layer is None
        layers: list[nn.Module] = [conv_layer(in_channels, out_channels, kernel_size, stride, padding,
                                              dilation=dilation, groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels


class Conv2dNormActivation(ConvNormActivation):
    """Conv2d, then norm_layer (default BatchNorm2d), then activation_layer (default ReLU)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple] = 3,
                 stride: Union[int, tuple] = 1, padding=None, groups: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = nn.BatchNorm2d,
                 activation_layer: Optional[Callable[..., nn.Module]] = nn.ReLU,
                 dilation: Union[int, tuple] = 1, inplace: Optional[bool] = True, bias: Optional[bool] = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv2d)


class Conv3dNormActivation(ConvNormActivation):
    """Conv3d, then norm_layer (default BatchNorm3d), then activation_layer (default ReLU)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple] = 3,
                 stride: Union[int, tuple] = 1, padding=None, groups: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = nn.BatchNorm3d,
                 activation_layer: Optional[Callable[..., nn.Module]] = nn.ReLU,
                 dilation: Union[int, tuple] = 1, inplace: Optional[bool] = True, bias: Optional[bool] = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv3d)
