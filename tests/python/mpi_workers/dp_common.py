"""The data-parallel test problem, shared by the mpirun worker (dp_train.py) and the
single-process reference in test_parallel_data.py: an MLP with fixed initial weights, 50 steps
of Momentum on fixed global batches of 16 rows."""
import numpy as np

from mycel import Tensor, nn, ops

STEPS, BATCH, FEATURES, CLASSES = 50, 16, 8, 4
OPTSHARD_STEPS = 6  # the optimizer-sharding run (dp_optshard.py): Adam, fewer steps


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(FEATURES, 16)
        self.fc2 = nn.Dense(16, CLASSES)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def make_net():
    net = MLP()
    rng = np.random.RandomState(0)
    for p in net.trainable_params():  # fixed weights: every process starts from the same point
        ops.assign(p, Tensor((rng.standard_normal(p.shape) * 0.3).astype(np.float32)))
    return net


def data():
    rng = np.random.RandomState(1)
    x = rng.standard_normal((STEPS * BATCH, FEATURES)).astype(np.float32)
    y = np.argmax(x @ rng.standard_normal((FEATURES, CLASSES)), axis=1).astype(np.int32)  # learnable
    return x, y


def make_step(net):
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    return nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt), loss, opt


def weights(net):
    return {p.name: p.asnumpy().copy() for p in net.trainable_params()}
