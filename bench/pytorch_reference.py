#!/usr/bin/python3
"""PyTorch baselines: training images/s of ResNets and a ViT; ViT accuracy on Fashion-MNIST.

Throughput mode (bench/train_throughput runs it): training images/s on
random N(0, 1) images with uniform labels, batch / median iteration after
warm-up.

  pytorch_reference.py [--model resnet18|...|vit] [--batch 16] [--image-size 64]
      [--classes 1000] [--threads T] [--iterations 5] [--warmup 2] [--seed 1] [--json -]
      ViT only: [--channels 3] [--patch 4] [--dim 128] [--depth 6] [--heads 4] [--mlp-ratio 2]
      [--lr 1e-3] [--weight-decay 0.05]

The ResNets are torchvision's ResNet v1.5 written out in plain PyTorch
(torchvision is not packaged for Debian), layer for layer the network that
cachedarrays::nn::build_model builds: stem conv 7x7/2 + BN + ReLU + max pool
3x3/2, BasicBlock / Bottleneck (stride on the 3x3), projection shortcuts
conv 1x1 + BN, global average pool, linear. One iteration is what
Trainer::step does: forward, mean softmax cross-entropy, backward, and
torch.optim.SGD(lr=0.01, momentum=0.9, weight_decay=1e-4).

The ViT (--model vit) is timm's vision_transformer.py, named as timm names
it and as our ViT does (patch_embed.proj, cls_token, pos_embed,
blocks.<i>.norm1 / attn.qkv / attn.proj / norm2 / mlp.fc1 / mlp.fc2, norm,
head): a conv of kernel and stride --patch with bias, the class token
prepended as token 0, a learned position embedding added, --depth pre-norm
blocks x + attn(norm1(x)), x + mlp(norm2(x)) (LayerNorm eps 1e-6; attention
softmax(q k^T / sqrt(dim / heads)) v over --heads heads; MLP fc1 to
dim * --mlp-ratio, exact erf GELU, fc2), no dropout, a final LayerNorm and
a linear head on the class token. Initial values are drawn from ours'
distributions: patch conv weight N(0, 2 / fan_in), bias
U(+-1/sqrt(fan_in)); cls_token, pos_embed and the blocks' Linear weights
N(0, 0.02^2), their biases 0; LayerNorms 1 and 0; head U(+-1/sqrt(fan_in)).
One iteration: forward, mean softmax cross-entropy, backward and
torch.optim.AdamW(betas=(0.9, 0.999), eps=1e-8) with two groups: weight
decay on the conv and Linear weights only (rank >= 2, except pos_embed and
cls_token); biases, LayerNorm parameters and the embeddings do not decay.

Accuracy mode: trains the ViT on Fashion-MNIST as
`train_cnn --model vit --data fashion-mnist --optimizer adamw
--lr-schedule warmup-cosine:W` does, testing after every epoch:

  pytorch_reference.py --train fashion-mnist --epochs E --batch B --lr LR
      --weight-decay WD --warmup-epochs W [--train-limit N] [--test-limit N]
      [--seed 1] [--threads T] [--json -] [ViT shape options as above]

- Data: the IDX files of $CACHEDARRAYS_FASHION_MNIST_DIR or
  /usr/share/datasets/fashion-mnist (gzipped or not), each pixel byte b
  decoded to float32((b / 255 - 0.2860) / 0.3530) as our ByteImageDataset
  does (bit for bit). --crop-padding P and --flip: our sampler's
  augmentation, re-implemented (src/nn/data/augmentation.cpp): pad by P
  zeros, crop back at an offset drawn from (seed, epoch, sample) as ours,
  then mirror when that sample's flip bit is set; the same images, bit for
  bit, as train_cnn's. --train-limit N: the first N training
  images, --test-limit N: the first N test images (0: all).
- Order: our BatchSampler's, re-implemented: a Fisher-Yates shuffle per
  (seed, epoch) driven by splitmix64 streams (src/nn/data/batch_sampler.cpp,
  counter_random.hpp); whole batches only, an epoch is floor(images / B)
  steps and the rest of its shuffled order is not trained on. The test pass
  goes through the first test images in order.
- Learning rate at 0-based global step s, set before the step, with
  S = floor(images / B) steps per epoch, total = E S, warm = W S:
  LR (s + 1) / warm while s < warm, then LR (1 + cos(pi (s - warm) /
  (total - warm))) / 2; rounded to float32 as our trainer holds it.
- Loss: mean softmax cross-entropy over the batch. --seed seeds both the
  data order (as train_cnn --seed) and torch's initial values (these match
  ours in distribution only, not value for value).

Threads: torch.set_num_threads(T) (0: all cores) and one inter-op thread.
Tensors use PyTorch's default memory format (NCHW contiguous), which is what
a user gets without asking; channels_last would be faster on some CPUs but
is an opt-in, so it is not the baseline. Caveat: this Debian torch is built
with BLAS_INFO=generic, so fp32 matrix products (all of the ViT's Linear
layers and attention products) run on whatever libblas.so.3 is, by default
the unoptimised reference BLAS, several times slower than OpenBLAS for the
ViT; the ViT modes warn about it. An OpenBLAS gets --threads threads too
(torch.set_num_threads does not reach it). OpenBLAS picks its kernels by
the CPU model name, and a virtual machine's generic name ("Intel(R) Xeon(R)
Processor") makes it fall back to its SSE3 "Prescott" kernels, about three
times slower than its AVX-512 ones on the same CPU: unless OPENBLAS_CORETYPE
is set, the script sets it from the CPU's vector extensions (SkylakeX for
AVX-512, Haswell for AVX2) before torch loads, so that the baseline is the
best this PyTorch can do. blas_info, blas_libraries, blas_threads and
blas_coretype in the JSON say which BLAS ran, and how.

Output: one JSON object (to stdout with --json -, else to the named file);
progress (every tenth of an epoch) and the parameter count go to stderr.
- Throughput: {model, batch, image_size, classes, threads, iterations,
  warmup, images_per_s, median_seconds, seconds, parameters, torch_version,
  mkldnn, mkldnn_version, blas_info, blas_libraries, blas_threads}, and for
  the ViT also {channels, tokens, patch, dim, depth, heads, mlp_ratio,
  optimizer, lr, weight_decay}.
- Accuracy: {model, data, config: {epochs, batch, lr, weight_decay,
  warmup_epochs, lr_schedule, optimizer, betas, eps, crop_padding, flip, train_limit, test_limit,
  train_images, test_images, steps_per_epoch, seed, threads, image_size,
  channels, classes, tokens, patch, dim, depth, heads, mlp_ratio},
  parameters, epochs: [{epoch, batches, train_loss (mean of the epoch's step
  losses), test_loss (mean per test image), test_accuracy (fraction),
  seconds (train steps + test pass), train_seconds, test_seconds,
  images_per_s (trained images / train_seconds, forward + backward + step
  only), last_lr, losses (every step's)}], test_accuracy and test_loss (the
  last epoch's), wall_seconds, torch_version, mkldnn, mkldnn_version,
  blas_info, blas_libraries, blas_threads}.

Self-checks (exit status 0 when they pass, nothing trained):
--check-parameter-counts: the ViT at timm's vit_base_patch16_224 and
vit_large_patch16_224 shapes (224 px, 3 channels, 1000 classes, patch 16,
mlp ratio 4; dim/depth/heads 768/12/12 and 1024/24/16) has timm's
86,567,656 and 304,326,632 parameters. --check-order: the data order
reproduces the orders tests/nn_sampler_tests.cpp pins for our sampler;
--check-order BINARY also compares whole epochs' orders (60,000 samples
among them) and the augmented images of every trained sample (crop
paddings 0 to 2, with and without flips) with what BINARY,
bench/sampler_order of a build (our BatchSampler itself), prints.
"""

import argparse
import ctypes
import gzip
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time



def _openblas_coretype():
    """OpenBLAS's kernels for this CPU's widest vector extension (see the
    module docstring), or None when it has neither AVX-512 nor AVX2."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    if "avx512f" in flags:
        return "SkylakeX"
    if "avx2" in flags:
        return "Haswell"
    return None


# Before torch (and the OpenBLAS it may load) starts: OpenBLAS reads the
# variable when it is loaded, so the process starts again with it set.
if "OPENBLAS_CORETYPE" not in os.environ and _openblas_coretype() is not None:
    os.environ["OPENBLAS_CORETYPE"] = _openblas_coretype()
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


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


# The Vision Transformer (Dosovitskiy et al. 2021), as timm's
# vision_transformer.py builds it and as our ViT names its parameters
# (include/cachedarrays/nn/transformer_layers.hpp): patch_embed.proj,
# cls_token, pos_embed, blocks.<i>.{norm1,attn.qkv,attn.proj,norm2,mlp.fc1,
# mlp.fc2}, norm, head. Pre-norm blocks, no dropout, no drop path.


class PatchEmbed(nn.Module):
    def __init__(self, channels, dim, patch, device=None):
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, kernel_size=patch, stride=patch, bias=True, device=device)

    def forward(self, x):
        # [N, D, h, w] -> [N, h w, D], patches in row-major order.
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, heads, device=None):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=True, device=device)
        self.proj = nn.Linear(dim, dim, bias=True, device=device)

    def forward(self, x):
        n, t, d = x.shape
        qkv = self.qkv(x).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        x = attn.softmax(dim=-1) @ v
        return self.proj(x.transpose(1, 2).reshape(n, t, d))


class Mlp(nn.Module):
    def __init__(self, dim, hidden, device=None):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden, bias=True, device=device)
        self.act = nn.GELU()  # exact (erf), not the tanh approximation
        self.fc2 = nn.Linear(hidden, dim, bias=True, device=device)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio, device=None):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6, device=device)
        self.attn = Attention(dim, heads, device=device)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6, device=device)
        self.mlp = Mlp(dim, dim * mlp_ratio, device=device)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """ViT on [N, channels, image_size, image_size] images, class-token head.

    Initialisation (distributions, not values, are what ours shares):
    patch_embed.proj weight N(0, 2 / fan_in) (kaiming normal), bias
    U(+-1/sqrt(fan_in)); cls_token and pos_embed N(0, 0.02^2); the blocks'
    Linear weights N(0, 0.02^2) and biases 0; LayerNorm weights 1, biases 0;
    head weight and bias U(+-1/sqrt(fan_in)) (PyTorch's Linear default).
    """

    def __init__(self, image_size, channels, classes, patch, dim, depth, heads, mlp_ratio, device=None):
        super().__init__()
        if image_size % patch != 0:
            raise ValueError(f"image size {image_size} is not a multiple of the patch size {patch}")
        if dim % heads != 0:
            raise ValueError(f"--dim {dim} is not divisible by --heads {heads}")
        self.tokens = 1 + (image_size // patch) ** 2
        self.patch_embed = PatchEmbed(channels, dim, patch, device=device)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim, device=device))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.tokens, dim, device=device))
        self.blocks = nn.Sequential(*[Block(dim, heads, mlp_ratio, device=device) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6, device=device)
        self.head = nn.Linear(dim, classes, device=device)

        fan_in = channels * patch * patch
        nn.init.normal_(self.patch_embed.proj.weight, mean=0.0, std=math.sqrt(2.0 / fan_in))
        nn.init.uniform_(self.patch_embed.proj.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
        nn.init.normal_(self.cls_token, std=0.02)
        nn.init.normal_(self.pos_embed, std=0.02)
        for block in self.blocks:
            for linear in (block.attn.qkv, block.attn.proj, block.mlp.fc1, block.mlp.fc2):
                nn.init.normal_(linear.weight, std=0.02)
                nn.init.zeros_(linear.bias)
        # LayerNorm starts at weight 1, bias 0 by default; the head keeps
        # nn.Linear's default, U(+-1/sqrt(fan_in)) for weight and bias.

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def adamw_parameter_groups(model, weight_decay):
    """AdamW's two groups: weights of rank >= 2 decay, except the embeddings
    pos_embed and cls_token; biases and LayerNorm parameters do not."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.ndim >= 2 and name not in ("pos_embed", "cls_token") else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def check_parameter_counts():
    """timm's vit_base_patch16_224 and vit_large_patch16_224 (built on the
    meta device: shapes only, no memory) must have timm's counts."""
    for name, dim, depth, heads, expected in (("vit_base_patch16_224", 768, 12, 12, 86_567_656),
                                              ("vit_large_patch16_224", 1024, 24, 16, 304_326_632)):
        model = VisionTransformer(224, 3, 1000, 16, dim, depth, heads, 4, device="meta")
        count = sum(p.numel() for p in model.parameters())
        if count != expected:
            raise SystemExit(f"{name}: {count:,} parameters, timm has {expected:,}")
        print(f"{name}: {count:,} parameters, as timm's", file=sys.stderr)


# Fashion-MNIST as our trainer reads it (src/nn/data/fashion_mnist.cpp,
# mnist.cpp, byte_image_dataset.cpp): the gzipped (or plain) IDX files in
# $CACHEDARRAYS_FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist, each
# byte b decoded to float32((b / 255.0 - mean) / std), computed in double,
# with the constants of include/cachedarrays/nn/data.hpp.
FASHION_MNIST_MEAN = 0.2860
FASHION_MNIST_STD = 0.3530
FASHION_MNIST_PACKAGE_DIR = "/usr/share/datasets/fashion-mnist"


def fashion_mnist_dir():
    return os.environ.get("CACHEDARRAYS_FASHION_MNIST_DIR") or FASHION_MNIST_PACKAGE_DIR


def read_idx(directory, name, magic, header):
    """The bytes after the header of IDX file `name` (.gz preferred, as ours)."""
    path = os.path.join(directory, name)
    if os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rb") as f:
            data = f.read()
        path += ".gz"
    elif os.path.exists(path):
        with open(path, "rb") as f:
            data = f.read()
    else:
        raise SystemExit(f"Fashion-MNIST: {path}.gz does not exist (nor does {path}); install Debian's "
                         "dataset-fashion-mnist package or set CACHEDARRAYS_FASHION_MNIST_DIR")
    if len(data) < header or int.from_bytes(data[0:4], "big") != magic:
        raise SystemExit(f"Fashion-MNIST: {path} is not an IDX file with magic 0x{magic:08x}")
    return path, data


def fashion_mnist(split):
    """(images uint8 [N, 1, 28, 28], labels int64 [N]) of 'train' or 't10k'."""
    directory = fashion_mnist_dir()
    image_path, images = read_idx(directory, f"{split}-images-idx3-ubyte", 0x00000803, 16)
    label_path, labels = read_idx(directory, f"{split}-labels-idx1-ubyte", 0x00000801, 8)
    count, rows, columns = (int.from_bytes(images[i:i + 4], "big") for i in (4, 8, 12))
    if len(images) - 16 != count * rows * columns:
        raise SystemExit(f"Fashion-MNIST: {image_path} holds {len(images) - 16} pixel bytes, its header "
                         f"announces {count} images of {rows}x{columns}")
    if int.from_bytes(labels[4:8], "big") != count or len(labels) - 8 != count:
        raise SystemExit(f"Fashion-MNIST: {label_path} does not hold the {count} labels of {image_path}")
    pixels = np.frombuffer(images, dtype=np.uint8, offset=16).reshape(count, 1, rows, columns)
    classes = np.frombuffer(labels, dtype=np.uint8, offset=8).astype(np.int64)
    if classes.max() >= 10:
        raise SystemExit(f"Fashion-MNIST: {label_path} has a label above 9")
    return pixels, classes


def decode_table(mean, std):
    return ((np.arange(256, dtype=np.float64) / 255.0 - mean) / std).astype(np.float32)


# The training order of our BatchSampler (src/nn/data/batch_sampler.cpp,
# counter_random.hpp): splitmix64 streams, a Fisher-Yates shuffle per
# (seed, epoch) over the first `samples` samples, whole batches only
# (drop_last: the remainder of an epoch is not trained on).
MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
SAMPLER_TAG = 0x0073616D706C6572  # "sampler"


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_at(key, n):
    return mix64((key + (n + 1) * GOLDEN_GAMMA) & MASK64)


ORDER_STREAM, AUGMENT_STREAM = 0, 1  # the sampler's streams: the order, then crops and flips


def sampler_key(seed, stream):
    """The key of our sampler's stream `stream` for `seed`."""
    return stream_at(mix64((seed ^ SAMPLER_TAG) & MASK64), stream)


def epoch_order(seed, epoch, samples):
    """The sample indices of epoch `epoch` (0-based), in training order."""
    order_key = sampler_key(seed, ORDER_STREAM)
    stream = stream_at(order_key, epoch)
    # stream_at(stream, i) for i = 1 .. samples - 1.
    i = np.arange(1, samples, dtype=np.uint64)
    swaps = (streams_at(stream, i) % (i + np.uint64(1))).tolist()  # j for step i sits at i - 1
    order = list(range(samples))
    for step in range(samples - 1, 0, -1):
        j = swaps[step - 1]
        order[step], order[j] = order[j], order[step]
    return np.array(order, dtype=np.int64)


def streams_at(keys, counters):
    """stream_at(key, n) elementwise over uint64 arrays (or scalars) of keys
    and counters, wrapping as uint64 does."""
    with np.errstate(over="ignore"):
        z = np.asarray(keys, dtype=np.uint64) + (np.asarray(counters, dtype=np.uint64) + np.uint64(1)) * np.uint64(
            GOLDEN_GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def augment(images, seed, epoch, indices, padding, flip):
    """Our sampler's augmentation (src/nn/data/augmentation.cpp) of the
    decoded images [N, C, H, W] of samples `indices` in 0-based epoch
    `epoch`: each image padded by `padding` zeros on every side, cut back to
    H x W at offsets (top, left) drawn uniformly from 0 .. 2 padding, then
    mirrored left-right when its flip bit is set (and `flip`). The draws
    depend on (seed, epoch, sample index) only."""
    if padding == 0 and not flip:
        return images
    streams = streams_at(stream_at(sampler_key(seed, AUGMENT_STREAM), epoch), indices)
    offsets = np.uint64(2 * padding + 1)
    tops = (streams_at(streams, 0) % offsets).astype(np.int64)
    lefts = (streams_at(streams, 1) % offsets).astype(np.int64)
    flips = (streams_at(streams, 2) >> np.uint64(63)) != 0 if flip else np.zeros(len(indices), dtype=bool)
    _, _, height, width = images.shape
    padded = np.pad(images, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    out = np.empty_like(images)
    for i in range(len(indices)):
        crop = padded[i, :, tops[i]:tops[i] + height, lefts[i]:lefts[i] + width]
        out[i] = crop[:, :, ::-1] if flips[i] else crop
    return out


def check_order():
    """The orders tests/nn_sampler_tests.cpp pins for our sampler (103
    samples, seed 7, epochs 0 and 1), and a check of the vectorised stream
    against the scalar one."""
    pinned = {0: [89, 25, 45, 74, 97, 54, 35, 64], 1: [35, 15, 89, 61, 23, 72, 76, 49]}
    for epoch, expected in pinned.items():
        got = epoch_order(7, epoch, 103)[:8].tolist()
        if got != expected:
            raise SystemExit(f"data order: epoch {epoch} of seed 7 starts {got}; our sampler's is {expected}")
    stream = stream_at(sampler_key(1, ORDER_STREAM), 3)
    order = list(range(1000))
    for step in range(999, 0, -1):
        j = stream_at(stream, step) % (step + 1)
        order[step], order[j] = order[j], order[step]
    if epoch_order(1, 3, 1000).tolist() != order:
        raise SystemExit("data order: the vectorised shuffle differs from the scalar one")
    print("data order: as our BatchSampler's (tests/nn_sampler_tests.cpp's pinned orders)", file=sys.stderr)


def sampler_order(binary, seed, samples, batch, epochs, padding=0, flip=False, side=1):
    """The lines `binary` (bench/sampler_order) prints for these settings."""
    command = [binary, "--seed", str(seed), "--samples", str(samples), "--batch", str(batch), "--epochs",
               str(epochs), "--crop-padding", str(padding), "--image-size", str(side)] + (["--flip"] if flip else [])
    try:
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"data order: {' '.join(command)} failed: {e}") from None
    lines = out.splitlines()
    augmenting = padding > 0 or flip
    if len(lines) != epochs * (2 if augmenting else 1):
        raise SystemExit(f"data order: {' '.join(command)} printed {len(lines)} lines for {epochs} epochs")
    return command, lines


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def check_order_against(binary):
    """Whole orders against `binary` (bench/sampler_order, our BatchSampler
    itself): the trained indices of every epoch, for a few seeds, sizes
    (the whole training set among them) and batches; then the augmented
    images of every trained sample for a few paddings, with and without
    flips."""
    for seed, samples, batch, epochs in ((1, 60000, 64, 2), (5, 3001, 100, 2), (123456789, 2000, 7, 3)):
        command, lines = sampler_order(binary, seed, samples, batch, epochs)
        trained = samples // batch * batch
        for epoch, line in enumerate(lines):
            label, _, indices = line.partition(":")
            theirs = [int(i) for i in indices.split()]
            ours = epoch_order(seed, epoch, samples)[:trained].tolist()
            if label != f"epoch {epoch}" or theirs != ours:
                raise SystemExit(f"data order: seed {seed}, {samples} samples, batch {batch}, epoch {epoch}: "
                                 f"{binary} and this script differ at position {first_difference(theirs, ours)} "
                                 f"of {len(theirs)} and {len(ours)} indices")
        print(f"data order: seed {seed}, {samples} samples, batch {batch}: {epochs} epochs as {binary}'s",
              file=sys.stderr)
    for seed, samples, batch, epochs, padding, flip, side in ((1, 2000, 128, 2, 2, True, 28),
                                                              (5, 301, 10, 2, 1, False, 8),
                                                              (123456789, 500, 7, 3, 0, True, 6)):
        command, lines = sampler_order(binary, seed, samples, batch, epochs, padding, flip, side)
        trained = samples // batch * batch
        picture = (np.arange(side * side, dtype=np.float32) + 1).reshape(1, 1, side, side)
        for epoch in range(epochs):
            indices = epoch_order(seed, epoch, samples)[:trained]
            label, _, pixels = lines[2 * epoch + 1].partition(":")
            theirs = [int(p) for p in pixels.split()]
            ours = augment(np.repeat(picture, trained, axis=0), seed, epoch, indices, padding, flip)
            ours = ours.astype(np.int64).ravel().tolist()
            if label != f"epoch {epoch} pixels" or theirs != ours:
                at = first_difference(theirs, ours)
                raise SystemExit(f"augmentation: seed {seed}, {samples} samples, padding {padding}, flip {flip}, "
                                 f"epoch {epoch}: {binary} and this script differ at pixel {at % (side * side)} of "
                                 f"trained sample {at // (side * side)} ({' '.join(command)})")
        print(f"augmentation: seed {seed}, {samples} samples, crop padding {padding}, flip {flip}: {epochs} epochs "
              f"as {binary}'s", file=sys.stderr)


def warmup_cosine(base, step, warm, total):
    """Our warmup-cosine:W schedule at 0-based global step `step`: linear
    warm-up to `base` over `warm` steps, then cosine to 0 at `total`; rounded
    to float32, as our trainer holds its learning rate."""
    if step < warm:
        lr = base * (step + 1) / warm
    else:
        lr = base * 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm)))
    return float(np.float32(lr))


def mkldnn_version():
    """oneDNN's version as torch was built with it, e.g. "2.6.3" (or "")."""
    match = re.search(r"MKL-DNN v([0-9.]+)", torch.__config__.show())
    return match.group(1) if match else ""


BLAS_THREADS = None  # an OpenBLAS's thread count, set by main


def write_json(result, destination):
    text = json.dumps(result)
    if destination == "-":
        print(text)
    else:
        with open(destination, "w", encoding="utf-8") as f:
            f.write(text + "\n")


def blas():
    """torch's BLAS as built (BLAS_INFO: "generic" is whatever libblas.so.3
    resolves to) and the BLAS library this process has mapped, e.g.
    /usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0, the unoptimised
    reference BLAS. fp32 matrix products (every Linear, attention's bmm) run
    on it; convolutions run on oneDNN."""
    match = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    libraries = set()
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            path = line.split()[-1]
            if re.search(r"/lib[^/]*blas[^/]*\.so|/libmkl_", path):
                libraries.add(path)
    return match.group(1) if match else "", sorted(libraries)


def openblas_threads(threads):
    """Sets an OpenBLAS's thread count to `threads` when torch runs on one
    (torch.set_num_threads does not reach it; it would use every core) and
    returns the count it reports; None without OpenBLAS."""
    for path in blas()[1]:
        if "openblas" in os.path.basename(path):
            library = ctypes.CDLL(path)
            library.openblas_set_num_threads(threads)
            return int(library.openblas_get_num_threads())
    return None


def warn_if_reference_blas():
    """The ViT's time is mostly fp32 matrix products, which this torch
    hands to libblas.so.3: say so when that is the reference BLAS."""
    reference = [p for p in blas()[1] if re.search(r"/blas/libblas\.so", p)]
    if reference:
        print(f"warning: torch's matrix products run on the unoptimised reference BLAS ({reference[0]}); the "
              "ViT is several times slower than with an optimised one (e.g. apt-get install libopenblas0-pthread, "
              "or LD_LIBRARY_PATH=<dir of OpenBLAS's libblas.so.3>)", file=sys.stderr)


def torch_facts():
    blas_info, blas_libraries = blas()
    return {
        "torch_version": torch.__version__,
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "mkldnn_version": mkldnn_version(),
        "blas_info": blas_info,
        "blas_libraries": blas_libraries,
        "blas_threads": BLAS_THREADS,
        "blas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
    }


def vit_shape(args):
    return {"patch": args.patch, "dim": args.dim, "depth": args.depth, "heads": args.heads,
            "mlp_ratio": args.mlp_ratio}


def make_vit(args, image_size, channels, classes):
    try:
        model = VisionTransformer(image_size, channels, classes, args.patch, args.dim, args.depth, args.heads,
                                  args.mlp_ratio)
    except ValueError as e:
        raise SystemExit(f"--model vit: {e}") from None
    parameters = sum(p.numel() for p in model.parameters())
    print(f"vit: {parameters:,} parameters, {model.tokens} tokens of {args.dim} ({channels}x{image_size}x{image_size}"
          f" images, patch {args.patch}, depth {args.depth}, {args.heads} heads, mlp ratio {args.mlp_ratio},"
          f" {classes} classes)", file=sys.stderr)
    return model, parameters


def adamw(model, lr, weight_decay):
    return torch.optim.AdamW(adamw_parameter_groups(model, weight_decay), lr=lr, betas=(0.9, 0.999), eps=1e-8)


def throughput(args):
    """Training images/s on random N(0, 1) images and uniform labels."""
    if args.model == "vit":
        model, parameters = make_vit(args, args.image_size, args.channels, args.classes)
        optimizer = adamw(model, args.lr, args.weight_decay)
    else:
        block, layers = MODELS[args.model]
        model = ResNet(block, layers, num_classes=args.classes)
        parameters = sum(p.numel() for p in model.parameters())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    model.train()
    criterion = nn.CrossEntropyLoss()  # mean over the batch, as our loss
    images = torch.randn(args.batch, args.channels, args.image_size, args.image_size)
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
        **torch_facts(),
    }
    if args.model == "vit":
        result.update(channels=args.channels, tokens=model.tokens, **vit_shape(args), optimizer="adamw",
                      lr=args.lr, weight_decay=args.weight_decay)
    return result


def train(args):
    """Trains the ViT on Fashion-MNIST as our trainer would, testing after
    every epoch."""
    wall_start = time.perf_counter()
    train_pixels, train_labels = fashion_mnist("train")
    test_pixels, test_labels = fashion_mnist("t10k")
    table = decode_table(FASHION_MNIST_MEAN, FASHION_MNIST_STD)
    samples = min(args.train_limit, len(train_labels)) if args.train_limit > 0 else len(train_labels)
    tests = min(args.test_limit, len(test_labels)) if args.test_limit > 0 else len(test_labels)
    steps_per_epoch = samples // args.batch  # whole batches only, as our sampler (drop_last)
    if steps_per_epoch == 0:
        raise SystemExit(f"--train-limit: an epoch of {samples} images holds no whole batch of {args.batch}")
    total = args.epochs * steps_per_epoch
    warm = args.warmup_epochs * steps_per_epoch

    _, channels, rows, columns = train_pixels.shape
    if rows != columns:
        raise SystemExit(f"Fashion-MNIST: images of {rows}x{columns}; the ViT takes square images")
    model, parameters = make_vit(args, rows, channels, 10)
    optimizer = adamw(model, args.lr, args.weight_decay)
    criterion = nn.CrossEntropyLoss()  # mean over the batch, as our loss
    print(f"training: {args.epochs} epochs of {steps_per_epoch} batches of {args.batch} over {samples} of "
          f"{len(train_labels)} training images, AdamW lr {args.lr:g} weight decay {args.weight_decay:g}, "
          f"warmup-cosine:{args.warmup_epochs}, seed {args.seed}; tested on {tests} images after each epoch, "
          f"{torch.get_num_threads()} threads", file=sys.stderr)

    epochs = []
    step = 0
    for epoch in range(args.epochs):
        order = epoch_order(args.seed, epoch, samples)
        model.train()
        losses = []
        train_seconds = 0.0
        for b in range(steps_per_epoch):
            batch = order[b * args.batch:(b + 1) * args.batch]
            images = torch.from_numpy(augment(table[train_pixels[batch]], args.seed, epoch, batch,
                                              args.crop_padding, args.flip))
            labels = torch.from_numpy(train_labels[batch])
            lr = warmup_cosine(args.lr, step, warm, total)
            for group in optimizer.param_groups:
                group["lr"] = lr
            t0 = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            train_seconds += time.perf_counter() - t0
            step += 1
            if (b + 1) % max(1, steps_per_epoch // 10) == 0 and b + 1 < steps_per_epoch:
                print(f"  epoch {epoch + 1} batch {b + 1}/{steps_per_epoch}  loss {statistics.fmean(losses):.4f}"
                      f"  lr {lr:.4g}  {(b + 1) * args.batch / train_seconds:.1f} img/s", file=sys.stderr)
        t0 = time.perf_counter()
        model.eval()
        loss_sum = 0.0
        correct = 0
        with torch.no_grad():
            for first in range(0, tests, args.batch):
                images = torch.from_numpy(table[test_pixels[first:min(first + args.batch, tests)]])
                labels = torch.from_numpy(test_labels[first:min(first + args.batch, tests)])
                logits = model(images)
                loss_sum += nn.functional.cross_entropy(logits, labels, reduction="sum").item()
                correct += int((logits.argmax(dim=1) == labels).sum())
        test_seconds = time.perf_counter() - t0
        e = {
            "epoch": epoch + 1,
            "batches": steps_per_epoch,
            "train_loss": statistics.fmean(losses),
            "test_loss": loss_sum / tests,
            "test_accuracy": correct / tests,
            "seconds": train_seconds + test_seconds,
            "train_seconds": train_seconds,
            "test_seconds": test_seconds,
            "images_per_s": steps_per_epoch * args.batch / train_seconds,
            "last_lr": lr,
            "losses": losses,
        }
        epochs.append(e)
        print(f"epoch {epoch + 1:>2}/{args.epochs}  train loss {e['train_loss']:.4f}  test loss {e['test_loss']:.4f}"
              f"  accuracy {100 * e['test_accuracy']:.2f}%  {e['images_per_s']:.1f} img/s  {e['seconds']:.1f} s",
              file=sys.stderr)

    return {
        "model": "vit",
        "data": args.train,
        "config": {
            "epochs": args.epochs,
            "batch": args.batch,
            "lr": args.lr,
            "weight_decay": args.weight_decay,
            "warmup_epochs": args.warmup_epochs,
            "lr_schedule": f"warmup-cosine:{args.warmup_epochs}",
            "optimizer": "adamw",
            "betas": [0.9, 0.999],
            "eps": 1e-8,
            "crop_padding": args.crop_padding,
            "flip": args.flip,
            "train_limit": args.train_limit,
            "test_limit": args.test_limit,
            "train_images": samples,
            "test_images": tests,
            "steps_per_epoch": steps_per_epoch,
            "seed": args.seed,
            "threads": torch.get_num_threads(),
            "image_size": rows,
            "channels": channels,
            "classes": 10,
            "tokens": model.tokens,
            **vit_shape(args),
        },
        "parameters": parameters,
        "epochs": epochs,
        "test_accuracy": epochs[-1]["test_accuracy"],
        "test_loss": epochs[-1]["test_loss"],
        "wall_seconds": time.perf_counter() - wall_start,
        **torch_facts(),
    }


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS) + ["vit"],
                        help="network (throughput default: resnet18; --train: vit, the only one it trains)")
    parser.add_argument("--batch", type=int, help="images per step (throughput default: 16; required with --train)")
    parser.add_argument("--image-size", type=int, help="throughput: image side (default 64)")
    parser.add_argument("--channels", type=int, help="throughput, vit: image channels (default 3)")
    parser.add_argument("--classes", type=int, help="throughput: classes (default 1000)")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: all cores)")
    parser.add_argument("--iterations", type=int, help="throughput: timed iterations (default 5)")
    parser.add_argument("--warmup", type=int, help="throughput: untimed iterations first (default 2)")
    parser.add_argument("--seed", type=int, default=1, help="torch's seed (initial values, random data) and, with "
                        "--train, the data order's, as train_cnn --seed")
    parser.add_argument("--json", default="-", help="output file ('-': stdout)")
    vit = parser.add_argument_group("ViT shape (--model vit)")
    vit.add_argument("--patch", type=int, default=4)
    vit.add_argument("--dim", type=int, default=128)
    vit.add_argument("--depth", type=int, default=6)
    vit.add_argument("--heads", type=int, default=4)
    vit.add_argument("--mlp-ratio", type=int, default=2, help="MLP hidden width = dim * this")
    vit.add_argument("--lr", type=float, help="AdamW's peak learning rate (throughput default 1e-3; required "
                     "with --train)")
    vit.add_argument("--weight-decay", type=float, help="AdamW's weight decay of the weights (throughput default "
                     "0.05; required with --train)")
    accuracy = parser.add_argument_group("accuracy mode (--train)")
    accuracy.add_argument("--train", choices=["fashion-mnist"], help="train the ViT on this data set, test after "
                          "every epoch")
    accuracy.add_argument("--epochs", type=int)
    accuracy.add_argument("--warmup-epochs", type=int, help="W of warmup-cosine:W: linear warm-up over W epochs, "
                          "then cosine to 0")
    accuracy.add_argument("--crop-padding", type=int, default=0, help="augmentation, as train_cnn's: pad by N "
                          "zeros, crop back at a random offset (0: none)")
    accuracy.add_argument("--flip", action="store_true", help="augmentation, as train_cnn's: mirror left-right with "
                          "probability 1/2")
    accuracy.add_argument("--train-limit", type=int, default=0, help="the first N training images (0: all)")
    accuracy.add_argument("--test-limit", type=int, default=0, help="the first N test images (0: all)")
    checks = parser.add_argument_group("self-checks (exit 0 when they pass)")
    checks.add_argument("--check-parameter-counts", action="store_true",
                        help="vit_base/large_patch16_224 must have timm's parameter counts")
    checks.add_argument("--check-order", nargs="?", const="", metavar="BINARY",
                        help="the data order must be our BatchSampler's: its pinned test orders, and with BINARY "
                        "(bench/sampler_order of a build) the whole orders it prints")
    args = parser.parse_args()

    def given(*names):
        return [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is not None]

    if args.threads < 0:
        parser.error("--threads must not be negative")
    if not 0 <= args.seed < 1 << 64:
        parser.error(f"--seed {args.seed}: must be 0 to 2^64 - 1, as train_cnn's")
    if args.check_parameter_counts or args.check_order is not None:
        return args
    if args.train:
        if args.model is None:
            args.model = "vit"
        if args.model != "vit":
            parser.error(f"--train trains the ViT only, not --model {args.model}")
        if given("image_size", "channels", "classes", "iterations", "warmup"):
            parser.error(f"{', '.join(given('image_size', 'channels', 'classes', 'iterations', 'warmup'))}: "
                         "throughput options; --train takes the images' shape and classes from the data")
        missing = [f"--{n.replace('_', '-')}" for n in ("epochs", "batch", "lr", "weight_decay", "warmup_epochs")
                   if getattr(args, n) is None]
        if missing:
            parser.error(f"--train needs {', '.join(missing)} (the values of the train_cnn run to match)")
        if args.epochs < 1 or args.batch < 1:
            parser.error("--epochs and --batch must be at least 1")
        if not 0 <= args.warmup_epochs <= args.epochs:
            parser.error(f"--warmup-epochs {args.warmup_epochs}: must be 0 to --epochs ({args.epochs})")
        if args.train_limit < 0 or args.test_limit < 0:
            parser.error("--train-limit and --test-limit must not be negative (0: the whole split)")
        if not 0 <= args.crop_padding <= 28:
            parser.error(f"--crop-padding {args.crop_padding}: must be 0 (no crop) to 28, the images' side")
    else:
        if given("epochs", "warmup_epochs"):
            parser.error(f"{', '.join(given('epochs', 'warmup_epochs'))}: only with --train")
        if args.train_limit or args.test_limit or args.crop_padding or args.flip:
            parser.error("--train-limit, --test-limit, --crop-padding and --flip: only with --train")
        if args.model is None:
            args.model = "resnet18"
        defaults = {"batch": 16, "image_size": 64, "classes": 1000, "iterations": 5, "warmup": 2, "channels": 3}
        if args.model == "vit":
            defaults.update(lr=1e-3, weight_decay=0.05)
        else:
            if given("channels", "lr", "weight_decay"):
                parser.error(f"{', '.join(given('channels', 'lr', 'weight_decay'))}: ViT options; the ResNet "
                             "takes 3 channels and trains with SGD(lr=0.01, momentum=0.9, weight_decay=1e-4)")
        for name, value in defaults.items():
            if getattr(args, name) is None:
                setattr(args, name, value)
        for name in ("batch", "image_size", "classes", "iterations", "channels"):
            if getattr(args, name) < 1:
                parser.error(f"--{name.replace('_', '-')} must be at least 1")
        if args.warmup < 0:
            parser.error("--warmup must not be negative")
    if args.model == "vit" and min(args.patch, args.dim, args.depth, args.heads, args.mlp_ratio) < 1:
        parser.error("--patch, --dim, --depth, --heads and --mlp-ratio must be at least 1")
    if args.model == "vit" and (args.lr <= 0 or args.weight_decay < 0):
        parser.error("--lr must be above 0 and --weight-decay not negative")
    return args


def main():
    args = parse_args()
    if args.check_parameter_counts or args.check_order is not None:
        if args.check_parameter_counts:
            check_parameter_counts()
        if args.check_order is not None:
            check_order()
            if args.check_order:
                check_order_against(args.check_order)
        return 0
    torch.set_num_threads(args.threads if args.threads > 0 else (os.cpu_count() or 1))
    torch.set_num_interop_threads(1)
    global BLAS_THREADS
    BLAS_THREADS = openblas_threads(torch.get_num_threads())
    if args.model == "vit":
        warn_if_reference_blas()
    torch.manual_seed(args.seed)
    write_json(train(args) if args.train else throughput(args), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
