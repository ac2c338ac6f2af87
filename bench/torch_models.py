"""PyTorch twins of the Mycel benchmark models (bench only: the framework never imports torch).
Each twin defines its parameters in the same order and shapes as the Mycel model, so weights copy
across by position (see copy_weights in bench_train.py)."""
import torch
from torch import nn


class LeNet5(nn.Module):
    """examples/lenet5.py: Mycel's Conv2d has no bias by default, so neither do these."""

    def __init__(self, num_class=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, bias=False)
        self.conv2 = nn.Conv2d(6, 16, 5, bias=False)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_class)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2, 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2, 2)
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def mlp(sizes=(784, 512, 512, 10)):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.shortcut is None else self.shortcut(x)))


class ResNet18Cifar(nn.Module):
    def __init__(self, num_classes=10, widths=(64, 128, 256, 512), imagenet_stem=False):
        super().__init__()
        if imagenet_stem:  # examples/models/resnet.py resnet(): 7x7 stride-2 stem and max-pool
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        else:
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]),
                                      nn.ReLU())
        stages, c = [], widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(c, w, stride), BasicBlock(w, w, 1)))
            c = w
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(self.stages(self.stem(x)).mean(dim=(2, 3)))


def resnet18(num_classes=1000):
    """ResNet-18 in the ImageNet layout (examples/models/resnet.py resnet18)."""
    return ResNet18Cifar(num_classes, imagenet_stem=True)


def _cbr(cin, cout, k=3, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6())


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = cin * t
        self.residual = stride == 1 and cin == cout
        layers = ([_cbr(cin, hidden, 1)] if t != 1 else []) + [
            _cbr(hidden, hidden, 3, stride, hidden), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    """examples/models/mobilenet.py at width 1.0 (1000 classes)."""

    def __init__(self, num_classes=1000):
        super().__init__()
        c, features = 32, [_cbr(3, 32, 3, 2)]
        for t, o, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                           (6, 160, 3, 2), (6, 320, 1, 1)):
            for i in range(n):
                features.append(InvertedResidual(c, o, s if i == 0 else 1, t))
                c = o
        features.append(_cbr(c, 1280, 1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


class TransformerClassifier(nn.Module):
    def __init__(self, d_model=128, nhead=4, dim_feedforward=512, num_layers=2, num_classes=10):
        super().__init__()
        self.layers = nn.Sequential(*[
            nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0, batch_first=True)
            for _ in range(num_layers)])
        self.classifier = nn.Linear(d_model, num_classes)

    def forward(self, x):
        return self.classifier(self.layers(x).mean(dim=1))
