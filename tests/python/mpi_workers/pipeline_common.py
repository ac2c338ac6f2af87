"""The pipeline test problem (pipeline_train.py and test_parallel_pipeline.py): four Dense+ReLU
layers in a SequentialCell, fixed weights, global batches of 16 rows in 4 micro-batches."""
import numpy as np

from mycel import Parameter, Tensor, nn, ops

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


class TPLayer(nn.Cell):
    """h @ w (MatMul with a shard strategy), then ReLU unless last."""

    def __init__(self, i, strategy, relu):
        super().__init__()
        rng = np.random.RandomState(10 + i)
        self.w = Parameter(Tensor((rng.standard_normal((SIZES[i], SIZES[i + 1])) * 0.4).astype(np.float32)),
                           name=f"w{i}")
        self.mm = ops.MatMul().shard(strategy)
        self.relu = relu

    def construct(self, h):
        h = self.mm(h, self.w)
        if self.relu:
            h = ops.relu(h)
        return h


def make_tp_net(k):
    """Four MatMul layers split Megatron-style over k ranks: by columns, then by rows (the
    reduction dim: an AllReduce), twice; on 2 stages each stage holds one such pair."""
    cols, rows = ((1, 1), (1, k)), ((1, k), (k, 1))
    return nn.SequentialCell([TPLayer(i, cols if i % 2 == 0 else rows, i < 3) for i in range(4)])
