"""Shared pieces of the training tests: a tiny SGD optimizer Cell (until nn.Momentum lands), a
linear model with a numpy reference, and the graph-mode parametrization."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor, Parameter, ParameterTuple

MODES = [pytest.param(mycel.PYNATIVE_MODE, id="pynative"),
         pytest.param(mycel.GRAPH_MODE, id="graph")]
BOTH_MODES = MODES


class SGD(nn.Cell):
    """p <- p - lr * g for each Parameter; learning_rate is a float32 Parameter."""

    def __init__(self, params, lr):
        super().__init__()
        self.parameters = ParameterTuple(params)
        self.learning_rate = Parameter(Tensor(np.array(lr, np.float32)), name="learning_rate",
                                       requires_grad=False)

    def construct(self, grads):
        for p, g in zip(self.parameters, grads):
            ops.assign(p, p - ops.cast(self.learning_rate, p.dtype) * g)
        return True


class MomentumSGD(SGD):
    """v <- 0.9 v + g; p <- p - lr v: an optimizer with state, for the overflow-skip test."""

    def __init__(self, params, lr):
        super().__init__(params, lr)
        self.moments = self.parameters.clone("moments", "zeros")

    def construct(self, grads):
        for p, v, g in zip(self.parameters, self.moments, grads):
            ops.assign(v, v * 0.9 + g)
            ops.assign(p, p - self.learning_rate * v)
        return True


class Linear(nn.Cell):
    """y = x w^T + b with given numpy weights."""

    def __init__(self, w, b):
        super().__init__()
        self.w = Parameter(Tensor(w), name="w")
        self.b = Parameter(Tensor(b), name="b")

    def construct(self, x):
        return ops.matmul(x, self.w, transpose_b=True) + self.b


def np_mse_and_grads(w, b, x, y):
    """Mean squared error of x w^T + b against y, and its gradients w.r.t. w and b (closed form)."""
    pred = x @ w.T + b
    d = pred - y
    loss = np.mean(d ** 2)
    g = 2.0 * d / d.size
    return loss, g.T @ x, g.sum(axis=0)


def regression_data(n=64, seed=0):
    """x (n, 3) and y = x [1, -2, 0.5] + 0.3 (n, 1), float32."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)
    return x, y


class LeNet5(nn.Cell):
    """LeNet5 for 1x32x32 inputs (the fusion and layout tests pin its compiled listings)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class WithLoss(nn.Cell):
    """net followed by sparse softmax cross-entropy (mean)."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, x, y):
        return self.loss(self.net(x), y)
