"""Graph-mode training step with a masked loss (not a test): masked_select, whose count is known
only at run time (its ops re-inferred and allocated per step, docs/dynamic_shape.md), against the
same loss written with select and a divide (static shapes). Alternates the two, median of 5x100.

    .venv/bin/python bench/bench_dynamic_shape.py
"""
import statistics, time
import numpy as np
import mycel as ms
from mycel import Tensor, nn, ops
ms.set_context(mode=ms.GRAPH_MODE)
class Net(nn.Cell):
    def __init__(self, ragged):
        super().__init__()
        self.d1, self.d2 = nn.Dense(256, 256), nn.Dense(256, 1)
        self.ragged = ragged
    def construct(self, x, y):
        pred = self.d2(ops.relu(self.d1(x))).reshape((-1,))
        keep = y >= 0
        if self.ragged:
            err = ops.masked_select(pred, keep) - ops.masked_select(y, keep)
            return (err * err).mean()
        err = ops.select(keep, pred - y, ops.zeros_like(y))
        return (err * err).sum() / ops.cast(keep, ms.float32).sum()
rng = np.random.default_rng(0)
x = Tensor(rng.normal(size=(256, 256)).astype(np.float32))
y = rng.normal(size=256).astype(np.float32); y[::3] = -1; y = Tensor(y)
for ragged in (False, True, False, True):
    net = Net(ragged)
    step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), 0.01))
    for _ in range(20): step(x, y)
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(100): step(x, y)
        ts.append((time.perf_counter() - t) * 10)
    print("ragged" if ragged else "static", f"{statistics.median(ts):.3f} ms/step")
