"""Optimizer sharding (enable_parallel_optimizer=True) under real mpirun: data parallel with
Adam, each rank updating a 1/N block of every parameter (gradients ReduceScattered; the blocks
AllGathered after the step in eager mode, inside the compiled step in graph mode, where the
weights themselves are stored as blocks). Losses and final weights must equal one process on the
same global batches (rtol 1e-5), in eager and graph mode, and each rank must hold 1/N of Adam's
state (and, in graph mode, of the weights). Lamb (a norm of the whole parameter) on 2 ranks too."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.dp_common import BATCH, OPTSHARD_STEPS as STEPS, data, make_net, weights


def one_process(optimizer):
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        x, y = data()
        net = make_net()
        step = nn.TrainOneStepCell(
            nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
            optimizer(net.trainable_params(), learning_rate=0.01))
        losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
                  for s in range(STEPS)]
        whole = sum(int(np.prod(p.shape)) * 4 for p in net.trainable_params()) * 2  # two moments, float32
        return np.array(losses), weights(net), whole
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.fixture(scope="module")
def reference():
    return one_process(nn.Adam)


def check(got, reference, n):
    losses, w, whole = reference
    for label in ("eager", "graph"):
        np.testing.assert_allclose(got[f"{label}_losses"], losses, rtol=1e-5, atol=1e-6, err_msg=label)
        for k in w:
            np.testing.assert_allclose(got[f"{label}_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"{label} {k}")
        # Every parameter's dim 0 (16, 16, 4, 4) divides by n: each rank keeps 1/n of the state.
        assert list(got[f"{label}_state_bytes"]) == [whole // n] * n, label
    # Graph mode stores the weights themselves as blocks (gathered inside the step): 1/n each.
    assert list(got["graph_weight_bytes"]) == [whole // 2 // n] * n
    assert list(got["eager_weight_bytes"]) == [whole // 2] * n


@requires_mpi
@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
def test_parallel_optimizer_matches_one_process(reference, n, tmp_path):
    rc, log = run_mpi(n, "dp_optshard.py", tmp_path, timeout=120)
    assert rc == 0, log
    check(dict(np.load(tmp_path / "optshard.npz")), reference, n)


@requires_mpi
def test_parallel_optimizer_with_lamb(tmp_path):
    """Lamb's trust ratio takes the norm of the whole parameter: with each rank updating a block,
    the blocks' sums of squares are AllReduced, and 2 ranks train as one process does."""
    rc, log = run_mpi(2, "dp_optshard.py", tmp_path, "lamb", timeout=120)
    assert rc == 0, log
    check(dict(np.load(tmp_path / "optshard_lamb.npz")), one_process(nn.Lamb), 2)
