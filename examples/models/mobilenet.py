"""MobileNetV2 (Sandler et al. 2018): a 3x3 stride-2 stem, inverted residual blocks (1x1
expansion, 3x3 depthwise convolution, linear 1x1 projection, ReLU6 activations, a residual add
when the block keeps shape), a 1x1 head to 1280 channels, global average pooling and a Dense
classifier. mobilenet_v2() with width 1.0 and 1000 classes has 3,504,872 parameters, as the paper's
Table 2 network; `width` scales every stage (rounded to multiples of 8)."""
from mycel import nn, ops


def _make_divisible(v, divisor=8):
    """Channel counts rounded to a multiple of `divisor`, never more than 10% below `v`."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBNReLU(nn.SequentialCell):
    """Convolution (no bias, 'same'-style padding), BatchNorm, ReLU6."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, group=1):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, pad_mode="pad",
                      padding=padding, group=group),
            nn.BatchNorm2d(out_channels), nn.ReLU6())


class InvertedResidual(nn.Cell):
    """expand (1x1, skipped when expand_ratio is 1) -> depthwise 3x3 -> linear 1x1 projection."""

    def __init__(self, in_channels, out_channels, stride, expand_ratio):
        super().__init__()
        hidden = int(round(in_channels * expand_ratio))
        self.use_residual = stride == 1 and in_channels == out_channels
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(in_channels, hidden, kernel_size=1))
        layers.extend([ConvBNReLU(hidden, hidden, stride=stride, group=hidden),
                       nn.Conv2d(hidden, out_channels, 1, pad_mode="valid"),
                       nn.BatchNorm2d(out_channels)])
        self.conv = nn.SequentialCell(layers)

    def construct(self, x):
        if self.use_residual:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Cell):
    """MobileNetV2 for (N, in_channels, H, W) images; `width` multiplies every channel count."""

    # (expand ratio t, channels c, repeats n, first stride s), the paper's Table 2
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, num_classes=1000, width=1.0, in_channels=3, stem_stride=2):
        super().__init__()
        channels = _make_divisible(32 * width)
        self.last_channels = _make_divisible(1280 * max(1.0, width))
        features = [ConvBNReLU(in_channels, channels, stride=stem_stride)]
        for t, c, n, s in self.SETTINGS:
            out = _make_divisible(c * width)
            for i in range(n):
                features.append(InvertedResidual(channels, out, s if i == 0 else 1, t))
                channels = out
        features.append(ConvBNReLU(channels, self.last_channels, kernel_size=1))
        self.features = nn.SequentialCell(features)
        self.classifier = nn.Dense(self.last_channels, num_classes)

    def construct(self, x):
        x = self.features(x)
        x = ops.mean(x, axis=(2, 3))  # global average pool
        return self.classifier(x)


def mobilenet_v2(num_classes=1000, width=1.0, in_channels=3, stem_stride=2):
    """MobileNetV2 (the paper's network at width 1.0 and 224x224 inputs)."""
    return MobileNetV2(num_classes, width, in_channels, stem_stride)
