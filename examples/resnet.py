"""ResNet-18 on tensorplug, and the gradient-penalty program of the PyTorch 0.2 release notes.

The model follows torchvision's layout and parameter names (`conv1`, `bn1`, `layer1.0.conv1`,
`layer2.0.downsample.0`, ..., `fc`): a 7x7 stride-2 convolution, batch norm, ReLU, 3x3 stride-2
max pool, four stages of two BasicBlocks (64, 128, 256, 512 channels; stages 2-4 start with
stride 2 and a 1x1-convolution shortcut), adaptive average pooling and a linear classifier.
Unlike torchvision the ReLUs and the residual sum are out of place (the values are the same).

Run as a script, it penalises the norm of the parameter gradients (seed 000, "higher-order
gradients"):

    output = model(input)
    loss = F.nll_loss(F.log_softmax(output, dim=1), target)
    grad_params = torch.autograd.grad(loss, model.parameters(), create_graph=True)
    grad_norm = sqrt(sum(g.pow(2).sum() for g in grad_params))
    grad_norm.backward()          # gradients of the gradient norm, in .grad
    optimizer.step()

    python examples/resnet.py [--size 64] [--batch 2] [--steps 2] [--double]
"""
from __future__ import annotations

import argparse
import time

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F

__all__ = ["BasicBlock", "ResNet", "resnet18", "gradient_penalty_step"]


def conv3x3(in_planes, out_planes, stride=1):
    """3x3 convolution with padding 1, no bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution, no bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():       # torchvision's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def resnet18(num_classes=1000, **kwargs):
    """ResNet-18: BasicBlock, [2, 2, 2, 2]."""
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, **kwargs)


def gradient_norm(model, input, target, create_graph=True):
    """sqrt(sum over parameters of |d loss / d p|^2), loss = nll_loss(log_softmax(model(input)))."""
    output = model(input)
    loss = F.nll_loss(F.log_softmax(output, dim=1), target)
    grad_params = torch.autograd.grad(loss, list(model.parameters()), create_graph=create_graph)
    grad_norm = 0
    for grad in grad_params:
        grad_norm = grad_norm + grad.pow(2).sum()
    return loss, grad_norm.sqrt()


def gradient_penalty_step(model, input, target, lr=0.01):
    """One step of the seed's program: backward of the gradient norm, then an SGD step."""
    model.zero_grad()
    loss, grad_norm = gradient_norm(model, input, target)
    grad_norm.backward()          # accumulates d grad_norm / d p into p.grad
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.sub_(lr * p.grad)
    return loss, grad_norm


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64, help="input height and width (the seed uses 224)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--double", action="store_true", help="float64 instead of float32")
    ap.add_argument("--lr", type=float, default=0.01)
    args = ap.parse_args(argv)

    torch.manual_seed(0)
    dtype = torch.float64 if args.double else torch.float32
    model = resnet18(num_classes=args.classes).to(dtype)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"ResNet-18: {n_params} parameters, {args.batch}x3x{args.size}x{args.size} {dtype}")

    # dummy inputs for the example
    input = torch.randn(args.batch, 3, args.size, args.size, dtype=dtype, requires_grad=True)
    target = torch.zeros(args.batch).long()
    for step in range(args.steps):
        t0 = time.perf_counter()
        loss, grad_norm = gradient_penalty_step(model, input, target, args.lr)
        dt = time.perf_counter() - t0
        print(f"step {step}: loss {loss.item():.6f}  grad_norm {grad_norm.item():.6f}  "
              f"|d grad_norm / d fc.weight| {model.fc.weight.grad.norm().item():.6f}  ({dt:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
