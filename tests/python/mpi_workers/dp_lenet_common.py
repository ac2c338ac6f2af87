"""The data-parallel LeNet5 problem shared by dp_lenet.py (under mpirun) and the single-process
reference in test_parallel_data.py: examples/lenet5.py's LeNet5 and Fashion-MNIST pipeline, fixed
initial weights, the first STEPS global batches in file order."""
import os
import sys

import mycel
from mycel import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
from lenet5 import LeNet5, build_model, create_dataset  # noqa: E402

STEPS, GLOBAL_BATCH = 200, 32


def dataset(batch):
    """STEPS batches of `batch` rows from the first STEPS * GLOBAL_BATCH training images: in
    data-parallel mode each rank reads its shard (rows R, R + N, ...; num_samples counts a shard's
    rows, as MindSpore's), so global batch s holds the same rows on N ranks as on one."""
    return create_dataset("train", batch_size=batch, shuffle=False, num_samples=STEPS * batch)


def make_model():
    mycel.set_seed(1)
    net = LeNet5()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    return build_model(net, opt), net
