"""Data-parallel training on 2 and 4 ranks equals a single-process run on the same global batches:
TrainOneStepCell (eager and graph mode) and Model.train with a dataset sharded by default. The
reference runs here, in this process, without any communication."""
import os

import numpy as np
import pytest

import mycel
import mycel.dataset as ds
from mycel import Tensor
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.dp_common import BATCH, STEPS, data, make_net, make_step, weights

pytestmark = requires_mpi


@pytest.fixture(scope="module")
def reference():
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        x, y = data()
        net = make_net()
        step, _, _ = make_step(net)
        losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
                  for s in range(STEPS)]
        step_w = weights(net)
        net = make_net()
        _, loss, opt = make_step(net)
        dataset = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(BATCH)
        mycel.Model(net, loss, opt).train(1, dataset)
        return np.array(losses), step_w, weights(net)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.fixture(scope="module", params=[2, 4], ids=["2ranks", "4ranks"])
def distributed(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"dp{request.param}")
    rc, log = run_mpi(request.param, "dp_train.py", out, timeout=120)
    assert rc == 0, log
    return out, dict(np.load(out / "dp.npz"))


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_train_one_step_cell_matches_single_process(reference, distributed, mode):
    ref_losses, ref_w, _ = reference
    _, got = distributed
    np.testing.assert_allclose(got[f"{mode}_losses"], ref_losses, rtol=1e-5, atol=1e-6)
    assert ref_losses[-1] < ref_losses[0] * 0.8  # it trained
    for k, v in ref_w.items():
        np.testing.assert_allclose(got[f"{mode}_w_{k}"], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_parameter_broadcast_starts_every_rank_from_rank_0(reference, distributed):
    _, ref_w, _ = reference
    _, got = distributed
    for k, v in ref_w.items():  # rank 1 began elsewhere; rank 0's weights were broadcast
        np.testing.assert_allclose(got[f"bcast_w_{k}"], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_model_train_with_default_shards_matches_single_process(reference, distributed):
    _, _, ref_w = reference
    out, got = distributed
    for k, v in ref_w.items():
        np.testing.assert_allclose(got[f"model_w_{k}"], v, rtol=1e-5, atol=1e-6, err_msg=k)
    assert os.listdir(out / "ckpt_rank0"), "rank 0 wrote no checkpoint"
    assert sorted(os.listdir(out)) == ["ckpt_rank0", "dp.npz"], "a rank other than 0 wrote a checkpoint"
