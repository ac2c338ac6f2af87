"""Compression on Fashion-MNIST LeNet5: magnitude pruning (unstructured) and channel pruning
(structured, smaller shapes) with fine-tuning, and knowledge distillation of a half-width
student from the trained LeNet5 teacher vs the same student trained on labels alone. Prints
accuracy, parameter counts and the MINDIR file size.

    .venv/bin/python bench/bench_compress.py [--epochs 2] [--finetune-epochs 1] [--train-samples N] [--skip-prune]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.lite import distill, prune  # noqa: E402
from lenet5 import LeNet5, build_model, create_dataset  # noqa: E402


class SmallLeNet(nn.Cell):
    """LeNet5 at half width: the distillation student."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 3, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(3, 8, 5, pad_mode="valid")
        self.fc1 = nn.Dense(8 * 5 * 5, 60)
        self.fc2 = nn.Dense(60, 42)
        self.fc3 = nn.Dense(42, 10)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))


def accuracy(net):
    m = mycel.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), metrics={"acc"})
    return m.eval(create_dataset("test", shuffle=False))["acc"]


def params(net):
    return sum(int(np.prod(p.shape)) for p in net.trainable_params())


def mindir_kib(net):
    with tempfile.TemporaryDirectory() as d:
        path = mycel.export(net, Tensor(np.zeros((1, 1, 32, 32), np.float32)), file_name=os.path.join(d, "m"),
                            file_format="MINDIR")
        return os.path.getsize(path) / 1024


def copy_of(net):
    q = LeNet5()
    for (_, a), (_, b) in zip(q.parameters_and_names(), net.parameters_and_names()):
        a.set_data(Tensor(b.asnumpy().copy()))
    return q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--finetune-epochs", type=int, default=1)
    ap.add_argument("--train-samples", type=int, default=None)
    ap.add_argument("--skip-prune", action="store_true", help="only the teacher and the distillation rows")
    a = ap.parse_args()
    mycel.set_seed(0)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    train = lambda: create_dataset("train", num_samples=a.train_samples)  # noqa: E731
    teacher = LeNet5()
    t = time.time()
    build_model(teacher, nn.Momentum(teacher.trainable_params(), 0.01, 0.9)).train(a.epochs, train())
    print(f"LeNet5 float32: {a.epochs} epochs in {time.time() - t:.0f} s")
    base = accuracy(teacher)
    print("| variant | accuracy | params | zero weights | MINDIR KiB |\n|---|---|---|---|---|")
    print(f"| LeNet5 | {base:.4f} | {params(teacher)} | 0% | {mindir_kib(teacher):.0f} |", flush=True)

    if not a.skip_prune:
        prune_rows(a, teacher, train)
    distill_rows(a, teacher, train)


def prune_rows(a, teacher, train):
    for sparsity in (0.5, 0.8):
        net = copy_of(teacher)
        pruner = prune.MagnitudePruner(sparsity)
        pruner.apply(net)
        before = accuracy(net)
        build_model(net, nn.Momentum(net.trainable_params(), 0.005, 0.9)).train(
            a.finetune_epochs, train(), callbacks=pruner.callbacks())
        print(f"| magnitude {sparsity:.0%} (before fine-tune {before:.4f}) | {accuracy(net):.4f} | {params(net)} | "
              f"{pruner.sparsity_of(net):.0%} | {mindir_kib(net):.0f} |", flush=True)

    net = copy_of(teacher)
    prune.ChannelPruner([("conv1", "conv2"), ("conv2", "fc1"), ("fc1", "fc2"), ("fc2", "fc3")], 0.5).apply(net)
    before = accuracy(net)
    build_model(net, nn.Momentum(net.trainable_params(), 0.005, 0.9)).train(a.finetune_epochs, train())
    print(f"| channels 50% (before fine-tune {before:.4f}) | {accuracy(net):.4f} | {params(net)} | 0% | "
          f"{mindir_kib(net):.0f} |", flush=True)


def distill_rows(a, teacher, train):
    mycel.set_seed(1)
    alone = SmallLeNet()
    build_model(alone, nn.Momentum(alone.trainable_params(), 0.01, 0.9)).train(a.epochs, train())
    print(f"| half-width student, labels only | {accuracy(alone):.4f} | {params(alone)} | 0% | "
          f"{mindir_kib(alone):.0f} |", flush=True)
    mycel.set_seed(1)
    student = SmallLeNet()
    cell = distill.DistillationCell(student, teacher, distill.DistillationLoss(temperature=4.0, alpha=0.7))
    step = nn.TrainOneStepCell(cell, nn.Momentum(student.trainable_params(), 0.01, 0.9))
    step.set_train()
    for _ in range(a.epochs):
        for batch in train().create_dict_iterator():
            step(batch["image"], batch["label"])
    print(f"| half-width student, distilled (T=4, alpha=0.7) | {accuracy(student):.4f} | {params(student)} | 0% | "
          f"{mindir_kib(student):.0f} |", flush=True)


if __name__ == "__main__":
    main()
