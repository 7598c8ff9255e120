#!/usr/bin/python3
"""PyTorch baseline for bench/train_throughput: training images/s of ResNet-18/50.

The networks are torchvision's ResNet v1.5 written out in plain PyTorch
(torchvision is not packaged for Debian), layer for layer the network that
cachedarrays::nn::build_model builds: stem conv 7x7/2 + BN + ReLU + max pool
3x3/2, BasicBlock / Bottleneck (stride on the 3x3), projection shortcuts
conv 1x1 + BN, global average pool, linear. One iteration is what
Trainer::step does: forward, mean softmax cross-entropy, backward, and
torch.optim.SGD(lr=0.01, momentum=0.9, weight_decay=1e-4).

Tensors use PyTorch's default memory format (NCHW contiguous), which is what a
user gets without asking; channels_last would be faster on some CPUs but is
an opt-in, so it is not the baseline.

Prints one JSON object (to stdout with --json -, else to the named file):
{model, batch, image_size, classes, threads, iterations, warmup,
images_per_s, median_seconds, seconds, parameters, torch_version, mkldnn,
mkldnn_version}.
"""

import argparse
import json
import re
import statistics
import sys
import time

import torch
from torch import nn


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)  # v1.5: stride on the 3x3
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


MODELS = {
    "resnet18": (BasicBlock, [2, 2, 2, 2]),
    "resnet34": (BasicBlock, [3, 4, 6, 3]),
    "resnet50": (Bottleneck, [3, 4, 6, 3]),
    "resnet101": (Bottleneck, [3, 4, 23, 3]),
    "resnet152": (Bottleneck, [3, 8, 36, 3]),
}


def mkldnn_version():
    """oneDNN's version as torch was built with it, e.g. "2.6.3" (or "")."""
    match = re.search(r"MKL-DNN v([0-9.]+)", torch.__config__.show())
    return match.group(1) if match else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet18")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: all cores)")
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations first")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default="-", help="output file ('-': stdout)")
    args = parser.parse_args()
    for name in ("batch", "image_size", "classes", "iterations"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0 or args.threads < 0:
        parser.error("--warmup and --threads must not be negative")

    import os
    threads = args.threads if args.threads > 0 else (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)

    block, layers = MODELS[args.model]
    model = ResNet(block, layers, num_classes=args.classes)
    model.train()
    parameters = sum(p.numel() for p in model.parameters())
    criterion = nn.CrossEntropyLoss()  # mean over the batch, as our loss
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(args.batch, 3, args.image_size, args.image_size)
    labels = torch.randint(0, args.classes, (args.batch,))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    seconds = []
    for _ in range(args.iterations):
        t0 = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - t0)
    median = statistics.median(seconds)

    result = {
        "model": args.model,
        "batch": args.batch,
        "image_size": args.image_size,
        "classes": args.classes,
        "threads": torch.get_num_threads(),
        "iterations": args.iterations,
        "warmup": args.warmup,
        "images_per_s": args.batch / median,
        "median_seconds": median,
        "seconds": seconds,
        "parameters": parameters,
        "torch_version": torch.__version__,
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "mkldnn_version": mkldnn_version(),
    }
    text = json.dumps(result)
    if args.json == "-":
        print(text)
    else:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
