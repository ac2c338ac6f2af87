"""Reusable model definitions (MindSpore style, graph-mode compatible): ResNet-18 for CIFAR and a
small transformer-encoder classifier."""
from .resnet import BasicBlock, ResNet, resnet18_cifar
from .transformer import TransformerClassifier

__all__ = ["BasicBlock", "ResNet", "resnet18_cifar", "TransformerClassifier"]
