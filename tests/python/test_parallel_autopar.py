"""Semi-auto parallel (issue 13) under real mpirun: model-parallel MLPs (matmuls split on rows,
columns and the reduction dim), a hybrid data x model conv net with a wide classifier, and
redistribution between every pair of a set of layouts. Each parallel run must give the losses,
weights and gradients of one process on the same global batches (the reference runs here)."""
import numpy as np
import pytest

import mycel
from mycel import ops
from mycel.parallel import ParallelMode
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.autopar_common import BATCH, MLP, cases, data, grads, train


@pytest.fixture(scope="module")
def reference():
    """Every case of 2 and 4 ranks, run in one process without parallelism."""
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        ref = {}
        for n in (2, 4):
            for name, (kind, make) in cases(n).items():
                losses, w = train(make(), kind)
                x, y = data(kind)
                net = make()
                g = grads(net, x[:BATCH], y[:BATCH])
                ref[(n, name)] = (losses, w, dict(zip([p.name for p in net.trainable_params()], g)))
        return ref
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@requires_mpi
@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
def test_semi_auto_runs_match_one_process(reference, n, tmp_path):
    rc, log = run_mpi(n, "autopar_train.py", tmp_path, timeout=240)
    assert rc == 0, log
    got = dict(np.load(tmp_path / "autopar.npz"))
    for name in cases(n):
        losses, w, g = reference[(n, name)]
        np.testing.assert_allclose(got[f"{name}_losses"], losses, rtol=1e-5, atol=1e-6, err_msg=name)
        assert losses[-1] < losses[0], name  # it trained
        for k in w:
            np.testing.assert_allclose(got[f"{name}_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"{name} {k}")
            np.testing.assert_allclose(got[f"{name}_g_{k}"], g[k], rtol=1e-5, atol=1e-6, err_msg=f"{name} {k}")


@requires_mpi
def test_redistribution_round_trips_every_pair_on_4_ranks():
    rc, log = run_mpi(4, "autopar_redist.py", timeout=120)
    assert rc == 0, log
    assert log.count("pairs exact") == 4, log


def test_shard_checks_its_strategy():
    mm = ops.MatMul()
    assert mm.shard(((2, 1), (1, 1))) is mm
    assert mm._in_strategy == ((2, 1), (1, 1))
    with pytest.raises(ValueError, match=r"MatMul.shard: in_strategy must be a tuple of tuples"):
        ops.MatMul().shard((2, 1))
    with pytest.raises(ValueError, match=r"MatMul.shard: in_strategy"):
        ops.MatMul().shard(((0, 1), (1, 1)))
    with pytest.raises(ValueError, match=r"out_strategy must hold one tuple"):
        ops.MatMul().shard(((2, 1), (1, 1)), ((2, 1), (2, 1)))


def test_semi_auto_in_one_process_refuses_splits_with_the_op_named():
    """device_num 1: a strategy that splits needs more devices; the error names the op and line."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL)
        assert mycel.get_auto_parallel_context("parallel_mode") == "semi_auto_parallel"
        net = MLP(((2, 1), (1, 1)))
        x, _ = data("mlp")
        with pytest.raises(ValueError, match=r"\[matmul\] strategy uses 2 devices, which does not divide "
                                             r"device_num 1(.|\n)*autopar_common.py"):
            net(mycel.Tensor(x[:BATCH]))
    finally:
        mycel.reset_auto_parallel_context()
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_stand_alone_ignores_strategies():
    """Outside semi-auto, shard() changes nothing: the same values as an unsharded net."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        x, _ = data("mlp")
        a = MLP(((2, 1), (1, 1)), ((1, 2), (2, 1)))(mycel.Tensor(x[:BATCH])).asnumpy()
        b = MLP()(mycel.Tensor(x[:BATCH])).asnumpy()
        np.testing.assert_array_equal(a, b)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_a_compiled_cell_recompiles_when_the_mode_changes():
    """The same Cell compiled stand-alone, then under semi-auto: the program is not reused (here
    the split strategy then fails on one device, which proves the recompile)."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = MLP(((2, 1), (1, 1)))
        x = mycel.Tensor(data("mlp")[0][:BATCH])
        net(x)
        mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL)
        with pytest.raises(ValueError, match=r"\[matmul\] strategy uses 2 devices"):
            net(x)
    finally:
        mycel.reset_auto_parallel_context()
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_cell_shard_checks_its_arguments():
    net = MLP()
    assert net.shard(((2, 1),), parameter_plan={"self.w2": (1, 2), "w1": (1, 1)}) is net
    assert net._shard_in_strategy == ((2, 1),) and net._shard_param_plan == {"w2": (1, 2), "w1": (1, 1)}
    with pytest.raises(ValueError, match=r"MLP.shard: parameter_plan names no weight of this Cell: 'self.w3'"):
        MLP().shard(((2, 1),), parameter_plan={"self.w3": (1, 2)})
    with pytest.raises(ValueError, match=r"parameter_plan\['w1'\] must give one split count per dim of the weight \(2\)"):
        MLP().shard(((2, 1),), parameter_plan={"w1": (2,)})
    with pytest.raises(ValueError, match=r"MLP.shard: in_strategy must be a tuple of tuples"):
        MLP().shard((2, 1))


def test_cell_shard_in_stand_alone_and_in_one_process():
    """Stand-alone: Cell.shard changes nothing. Semi-auto on one device: a split it asks for needs
    more devices, and the error names the hint and the user's Cell."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        x = mycel.Tensor(data("mlp")[0][:BATCH])
        a = MLP().shard(((2, 1),), ((2, 1),), parameter_plan={"w2": (1, 2)})(x).asnumpy()
        np.testing.assert_array_equal(a, MLP()(x).asnumpy())
        mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL)
        with pytest.raises(ValueError, match=r"\[layout\] strategy \[2,1\] uses 2 devices, which does not divide 1"):
            MLP().shard(((2, 1),))(x)
    finally:
        mycel.reset_auto_parallel_context()
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
