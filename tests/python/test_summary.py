"""Cell.summary: per-layer output shapes, parameter counts and trainable flags, totals and
parameter memory, in both modes; LeNet5's count checked against numpy shapes counted here."""
import numpy as np
import pytest

import mycel
from mycel import nn
from mycel.train import Model


class LeNet5(nn.Cell):
    """The classic LeNet5 (biases everywhere) on 32x32 inputs with 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid", has_bias=True)
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid", has_bias=True)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def numpy_count():
    """LeNet5's parameters counted from their shapes alone (weights and biases)."""
    shapes = [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400), (120,), (84, 120), (84,),
              (10, 84), (10,)]
    return sum(int(np.prod(s)) for s in shapes)


EXPECTED = """\
LeNet5 summary
------------------------------------------------------
Layer    Type       Output shape     Params  Trainable
------------------------------------------------------
conv1    Conv2d     (2, 6, 28, 28)      156  yes
relu     ReLU       (2, 6, 28, 28)        0
pool     MaxPool2d  (2, 6, 14, 14)        0
conv2    Conv2d     (2, 16, 10, 10)   2,416  yes
relu     ReLU       (2, 16, 10, 10)       0
pool     MaxPool2d  (2, 16, 5, 5)         0
flatten  Flatten    (2, 400)              0
fc1      Dense      (2, 120)         48,120  yes
relu     ReLU       (2, 120)              0
fc2      Dense      (2, 84)          10,164  yes
relu     ReLU       (2, 84)               0
fc3      Dense      (2, 10)             850  yes
------------------------------------------------------
Total params: 61,706 (trainable 61,706, non-trainable 0)
Parameter memory: 246,824 bytes (0.24 MiB)"""


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_lenet5_summary(mode, capsys):
    assert numpy_count() == 61706
    mycel.set_context(mode=mode)
    try:
        net = LeNet5()
        text = net.summary(mycel.Tensor(np.zeros((2, 1, 32, 32), np.float32)))
        assert mycel.get_context("mode") == mode  # restored after the eager run
        assert net(mycel.Tensor(np.zeros((2, 1, 32, 32), np.float32))).shape == (2, 10)  # hooks removed
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    assert text == EXPECTED
    assert capsys.readouterr().out == EXPECTED + "\n"
    assert sum(p.size for p in net.get_parameters()) == numpy_count()


def test_frozen_layers_and_model_summary():
    net = LeNet5()
    for p in net.conv1.get_parameters():
        p.requires_grad = False
    text = Model(net).summary()  # no inputs: counts only
    assert "conv1    Conv2d     -                156  no" in text
    assert "Total params: 61,706 (trainable 61,550, non-trainable 156)" in text


def test_summary_changes_no_state():
    """The eager run is in inference mode: batch-norm statistics stay, training flags come back."""
    net = nn.SequentialCell([nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU()])
    net.set_train(True)
    before = {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}
    text = net.summary(mycel.Tensor(np.random.rand(2, 1, 8, 8).astype(np.float32)))
    assert all((p.asnumpy() == before[n]).all() for n, p in net.parameters_and_names())
    assert all(c.training for _, c in net.cells_and_names())
    assert "1      BatchNorm2d  (2, 4, 8, 8)      16  partly" in text  # moving statistics are not trainable
