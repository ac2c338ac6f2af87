"""Shared by the edge tests (export, ONNX import, lite): the model zoo's nets with randomized
weights and BatchNorm statistics, so that a wrong transpose or a dropped BN shows in the outputs."""
import os
import sys

import numpy as np

import mycel
from mycel import Tensor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from lenet5 import LeNet5  # noqa: E402
from models.mobilenet import mobilenet_v2  # noqa: E402
from models.resnet import resnet18_cifar  # noqa: E402


def randomize(net, seed=0):
    """Every parameter (BN moving statistics too) drawn at random, variances positive."""
    rng = np.random.default_rng(seed)
    for name, p in net.parameters_and_names():
        shape = tuple(p.shape)
        if "variance" in name:
            v = rng.uniform(0.5, 2.0, shape)
        elif "mean" in name or "beta" in name or "bias" in name:
            v = rng.normal(0, 0.1, shape)
        elif "gamma" in name:
            v = rng.uniform(0.5, 1.5, shape)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            v = rng.normal(0, np.sqrt(2.0 / fan_in), shape)
        p.set_data(Tensor(v.astype(np.float32)))
    net.set_train(False)
    return net


# name -> (constructor, example input shape); MobileNetV2 at 64x64 keeps the tests fast.
MODELS = {
    "lenet5": (lambda: LeNet5(), (1, 1, 32, 32)),
    "resnet18": (lambda: resnet18_cifar(), (1, 3, 32, 32)),
    "mobilenet_v2": (lambda: mobilenet_v2(num_classes=10), (1, 3, 64, 64)),
}


def graph_outputs(net, x):
    """net(x) in graph mode, as numpy."""
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        return net(Tensor(x)).asnumpy()
    finally:
        mycel.set_context(mode=old)
