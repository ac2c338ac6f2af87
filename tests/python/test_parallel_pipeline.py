"""Pipeline parallel (nn.PipelineCell, pipeline_stages, Cell.pipeline_stage) under real mpirun:
four Dense layers cut into 2 and 4 stages, 4 micro-batches (GPipe), graph mode. The last stage's
losses and every stage's final weights must equal one process on the whole batches (1e-5)."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.parallel import ParallelMode
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.pipeline_common import BATCH, STEPS, data, make_net, stage_of


@pytest.fixture(scope="module")
def reference():
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = make_net()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss),
                                   nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
        x, y = data()
        losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
                  for s in range(STEPS)]
        return np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@requires_mpi
@pytest.mark.parametrize("n", [2, 4], ids=["2stages", "4stages"])
def test_pipeline_matches_one_process(reference, n, tmp_path):
    rc, log = run_mpi(n, "pipeline_train.py", tmp_path, timeout=120)
    assert rc == 0, log
    losses, w = reference
    seen = set()
    for r in range(n):
        got = dict(np.load(tmp_path / f"pipe_rank{r}.npz"))
        if r == n - 1:
            np.testing.assert_allclose(got["losses"], losses, rtol=1e-5, atol=1e-6)
        else:
            assert not got["losses"].any()  # only the last stage takes the loss
        for k, v in got.items():
            if k != "losses":
                np.testing.assert_allclose(v, w[k], rtol=1e-5, atol=1e-6, err_msg=f"rank {r} {k}")
                seen.add(k)
    assert seen == set(w)  # every weight trained on its stage
    assert [stage_of(i, n) for i in range(4)] == sorted(stage_of(i, n) for i in range(4))


def test_pipeline_cell_checks_its_network():
    mycel.reset_auto_parallel_context()
    net = make_net()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    with pytest.raises(ValueError, match="micro_size must be an int >= 1"):
        nn.PipelineCell(nn.WithLossCell(net, loss), 0)
    with pytest.raises(TypeError, match="backbone is a SequentialCell"):
        nn.PipelineCell(loss, 2)
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, pipeline_stages=2)
    try:
        with pytest.raises(ValueError, match=r"pipeline_stages \(2\) must equal the number of processes \(1\)"):
            nn.PipelineCell(nn.WithLossCell(net, loss), 2)
    finally:
        mycel.reset_auto_parallel_context()
    with pytest.raises(ValueError, match="pipeline_stages must be an int >= 1"):
        mycel.set_auto_parallel_context(pipeline_stages=0)


def test_one_stage_runs_micro_batches(reference):
    """One process, one stage: PipelineCell only cuts the batch into micro-batches, and the mean
    of their mean losses is the batch's mean loss (gradients likewise)."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = make_net()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = nn.TrainOneStepCell(nn.PipelineCell(nn.WithLossCell(net, loss), 4),
                                   nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
        x, y = data()
        losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
                  for s in range(STEPS)]
        np.testing.assert_allclose(losses, reference[0], rtol=1e-5)
        for p in net.trainable_params():
            np.testing.assert_allclose(p.asnumpy(), reference[1][p.name], rtol=1e-5, atol=1e-6, err_msg=p.name)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
