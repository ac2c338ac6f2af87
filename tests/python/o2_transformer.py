"""The small O2 transformer training run that the bf16 attention fusion tests compare with their
switches on and off: a TransformerClassifier under amp.build_train_network(level="O2") with
momentum, a few steps on a fixed batch in graph mode (the caller sets the mode and switches)."""
import os
import sys

import numpy as np

import mycel
from mycel import Tensor, amp, nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models import TransformerClassifier  # noqa: E402


def o2_transformer_run(threads, steps, d_model, ff, batch, seq, level="O2"):
    """At amp `level` (O0: float32): (losses, final weights, the step's program listing, initial weights); the weights are copies
    (asnumpy shares a parameter's memory)."""
    mycel.set_context(num_threads=threads)
    mycel.set_seed(3)
    net = TransformerClassifier(d_model=d_model, nhead=2, dim_feedforward=ff, num_layers=2)
    opt = nn.Momentum(net.trainable_params(), 0.02, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = amp.build_train_network(net, opt, loss, level=level)
    step.set_train(True)
    init = [p.asnumpy().copy() for p in net.trainable_params()]
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((batch, seq, d_model)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, batch).astype(np.int32))
    losses = [step(x, y).asnumpy() for _ in range(steps)]
    text = step.__dict__["_compiled"]._graph.program_text(x, y)
    return np.array(losses), [p.asnumpy().copy() for p in net.trainable_params()], text, init
