"""The pipeline test problem (pipeline_train.py and test_parallel_pipeline.py): four Dense+ReLU
layers in a SequentialCell, fixed weights, global batches of 16 rows in 4 micro-batches."""
import numpy as np

from mycel import Tensor, nn, ops

STEPS, BATCH, MICRO = 3, 16, 4
SIZES = (8, 16, 16, 16, 4)


def make_net():
    cells = []
    for i in range(4):
        dense = nn.Dense(SIZES[i], SIZES[i + 1])
        cells.append(nn.SequentialCell([dense, nn.ReLU()]) if i < 3 else dense)
    net = nn.SequentialCell(cells)
    rng = np.random.RandomState(0)
    for p in net.trainable_params():
        ops.assign(p, Tensor((rng.standard_normal(p.shape) * 0.4).astype(np.float32)))
    return net


def stage_of(layer, n):
    """Layer i's stage on n ranks: the four layers in n consecutive groups."""
    return layer * n // 4


def data():
    rng = np.random.RandomState(1)
    x = rng.standard_normal((STEPS * BATCH, SIZES[0])).astype(np.float32)
    y = rng.randint(0, SIZES[-1], STEPS * BATCH).astype(np.int32)
    return x, y
