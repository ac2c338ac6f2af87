"""A small log directory with everything the dashboard shows, made by real training: two runs of a
small conv net in GRAPH_MODE with SummaryCollector (scalars, weight histograms, input images, the
train step's graph, the dataset graph, lineage with eval metrics and a checkpoint) and one
Profiler output. Used by the dashboard's tests and by scripts/insight_screenshots.py."""
import os

import numpy as np

import mycel
import mycel.dataset as ds
import mycel.dataset.vision as vision
from mycel import nn
from mycel.train import Model
from mycel.train.callback import ModelCheckpoint, CheckpointConfig, SummaryCollector

RUNS = {"lr_0.05": 0.05, "lr_0.2": 0.2}  # run name -> learning rate
STEPS_PER_EPOCH = 4
EPOCHS = 2


class SmallNet(nn.Cell):
    """conv -> relu -> pool -> conv -> relu -> flatten -> dense, on 1x12x12 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(8 * 6 * 6, 3)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        return self.fc(self.flatten(self.relu(self.conv2(x))))


def _dataset(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, STEPS_PER_EPOCH * 8).astype(np.int32)
    x = rng.normal(0, 1.0, (y.size, 1, 12, 12)).astype(np.float32)
    for k in range(3):  # a bright square whose place tells the class
        x[y == k, :, 2 + 3 * k:5 + 3 * k, 2:10] += 0.6
    data = ds.NumpySlicesDataset((x, y), column_names=["image", "label"], shuffle=False)
    return data.map(operations=[vision.Rescale(1.0, 0.0)], input_columns="image").batch(8)


def make_demo_logdir(root):
    """Writes the runs under root/<run> and a profile under root/profile; returns root."""
    mode = mycel.get_context("mode")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        for k, (run, lr) in enumerate(RUNS.items()):
            mycel.set_seed(k)
            net = SmallNet()
            loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
            model = Model(net, loss, nn.Momentum(net.trainable_params(), lr, 0.9), metrics={"acc"})
            d = os.path.join(root, run)
            ckpt = ModelCheckpoint(prefix="small", directory=os.path.join(d, "ckpt"),
                                   config=CheckpointConfig(save_checkpoint_steps=STEPS_PER_EPOCH))
            collector = SummaryCollector(d, collect_freq=1,
                                         custom_lineage_data={"seed": k, "note": f"demo {run}"})
            model.train(EPOCHS, _dataset(k), callbacks=[collector, ckpt])
            model.eval(_dataset(10), callbacks=[collector])
        profiler = mycel.Profiler(output_path=os.path.join(root, "profile"))
        net = SmallNet()
        model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                      nn.Momentum(net.trainable_params(), 0.05, 0.9))
        model.train(1, _dataset(3))
        profiler.analyse()
    finally:
        mycel.set_context(mode=mode)
    return root
