"""Reusable model definitions (MindSpore style, graph-mode compatible): ResNet-18 for CIFAR and a
small transformer-encoder classifier; ResNet-18 in the ImageNet layout and MobileNetV2 for
224x224 images."""
from .mobilenet import MobileNetV2, mobilenet_v2
from .resnet import BasicBlock, ResNet, resnet18, resnet18_cifar
from .transformer import TransformerClassifier

__all__ = ["BasicBlock", "MobileNetV2", "ResNet", "mobilenet_v2", "resnet18", "resnet18_cifar",
           "TransformerClassifier"]
