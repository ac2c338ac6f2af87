"""ResNet with BasicBlocks in the CIFAR layout (He et al. 2016, the variant used for 32x32 images
by most CIFAR training recipes): a 3x3 stem convolution with stride 1 and no max-pool, four stages
of BasicBlocks with 64/128/256/512 channels (strides 1, 2, 2, 2), global average pooling and one
Dense classifier. resnet18_cifar() has 11,173,962 trainable parameters with 10 classes.
resnet18() is the ImageNet layout (a 7x7 stride-2 stem and a 3x3 stride-2 max-pool, for 224x224
images): 11,689,512 trainable parameters with 1000 classes, as torchvision's resnet18."""
from mycel import nn, ops


def _conv3x3(in_channels, out_channels, stride=1):
    """3x3 convolution with padding 1 and no bias (a BatchNorm follows)."""
    return nn.Conv2d(in_channels, out_channels, 3, stride=stride, pad_mode="pad", padding=1)


class BasicBlock(nn.Cell):
    """Two 3x3 conv + BatchNorm layers with a residual connection; when the block changes the
    resolution or the width, the shortcut is a strided 1x1 convolution + BatchNorm."""

    expansion = 1

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.conv1 = _conv3x3(in_channels, out_channels, stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = _conv3x3(out_channels, out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()
        self.has_projection = stride != 1 or in_channels != out_channels
        self.shortcut = None
        if self.has_projection:
            self.shortcut = nn.SequentialCell(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, pad_mode="valid"),
                nn.BatchNorm2d(out_channels))

    def construct(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x
        if self.has_projection:
            identity = self.shortcut(x)
        return self.relu(out + identity)


class ResNet(nn.Cell):
    """CIFAR-layout ResNet: stem, len(layers) stages of `block`, global average pool, Dense."""

    def __init__(self, block, layers, num_classes=10, in_channels=3, widths=(64, 128, 256, 512),
                 imagenet_stem=False):
        super().__init__()
        if imagenet_stem:  # 224x224 inputs: /4 before the first stage
            self.stem = nn.SequentialCell(
                nn.Conv2d(in_channels, widths[0], 7, stride=2, pad_mode="pad", padding=3),
                nn.BatchNorm2d(widths[0]), nn.ReLU(),
                nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1))
        else:
            self.stem = nn.SequentialCell(_conv3x3(in_channels, widths[0]),
                                          nn.BatchNorm2d(widths[0]), nn.ReLU())
        stages = []
        channels = widths[0]
        for i, (num_blocks, width) in enumerate(zip(layers, widths)):
            stride = 1 if i == 0 else 2
            blocks = []
            for j in range(num_blocks):
                blocks.append(block(channels, width, stride if j == 0 else 1))
                channels = width * block.expansion
            stages.append(nn.SequentialCell(blocks))
        self.stages = nn.SequentialCell(stages)
        self.fc = nn.Dense(channels, num_classes)

    def construct(self, x):
        x = self.stages(self.stem(x))
        x = ops.mean(x, axis=(2, 3))  # global average pool: (N, C, H, W) -> (N, C)
        return self.fc(x)


def resnet18_cifar(num_classes=10, in_channels=3):
    """ResNet-18 (BasicBlocks [2, 2, 2, 2]) for 32x32 images."""
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, in_channels=in_channels)


def resnet18(num_classes=1000, in_channels=3):
    """ResNet-18 in the ImageNet layout (7x7 stride-2 stem, max-pool) for 224x224 images."""
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, in_channels=in_channels,
                  imagenet_stem=True)
