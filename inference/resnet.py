"""ResNet50 (torchvision's v1.5 layout), defined here so that building it imports only torch.

Why not ``torchvision.models.resnet``: importing any ``torchvision`` submodule runs
``torchvision/__init__``, which imports every architecture, ``torchvision.ops`` and, through
it, ``torch._dynamo`` (6.3 s cold on a lent H100 machine, about 1 s warm here). The driver,
the packaging step and every CPU-inference worker only need this one network.

The module tree, parameter names, construction order and initialisation are torchvision's
exactly, so torchvision state dicts load unchanged and seeded random weights are bit for bit
the ones ``torchvision.models.resnet50(weights=None)`` makes (tests/unit/test_model.py checks both).
"""

from __future__ import annotations

import torch
from torch import nn

# (planes, blocks, stride) of the four stages of ResNet50.
RESNET50_STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))
EXPANSION = 4  # a bottleneck's output has 4x its inner width
NUM_CLASSES = 1000  # ImageNet


def _conv(in_planes: int, out_planes: int, kernel: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=kernel, stride=stride, padding=kernel // 2, bias=False)


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (carries the stride: v1.5) -> 1x1, plus the identity or a projection."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None) -> None:
        super().__init__()
        # Registration order matters: torchvision's init loop walks modules in this order.
        self.conv1 = _conv(inplanes, planes, 1)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv(planes, planes, 3, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv(planes, planes * EXPANSION, 1)
        self.bn3 = nn.BatchNorm2d(planes * EXPANSION)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        inplanes = 64
        for index, (planes, blocks, stride) in enumerate(RESNET50_STAGES, start=1):
            setattr(self, f"layer{index}", _stage(inplanes, planes, blocks, stride))
            inplanes = planes * EXPANSION
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, num_classes)
        self._init_like_torchvision()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, 3, H, W) -> (N, classes) logits
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))

    def _init_like_torchvision(self) -> None:
        if self.fc.weight.is_meta:
            # Shapes only (a checkpoint's check, or a module its weights are then assigned to): nothing to draw,
            # and normal_'s meta kernel imports torch._dynamo and sympy, about 1 s in every predictor's start.
            return
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.constant_(module.weight, 1)
                nn.init.constant_(module.bias, 0)


def _stage(inplanes: int, planes: int, blocks: int, stride: int) -> nn.Sequential:
    # torchvision builds the projection before the first block; the RNG draws follow that order.
    downsample = None
    if stride != 1 or inplanes != planes * EXPANSION:
        downsample = nn.Sequential(_conv(inplanes, planes * EXPANSION, 1, stride), nn.BatchNorm2d(planes * EXPANSION))
    layers = [Bottleneck(inplanes, planes, stride, downsample)]
    layers += [Bottleneck(planes * EXPANSION, planes) for _ in range(1, blocks)]
    return nn.Sequential(*layers)
