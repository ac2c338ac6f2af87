"""Weights stored as slices (slice_parameters, on by default, issue 13) under real mpirun:
before the step first compiles, the sharding pass plans the network's forward and each rank
keeps only its slice of every weight the pass splits (and of its Momentum state); gradients of
a slice are reduced over the ranks holding it. Checked: each rank's parameter bytes equal the
closed form (whole bytes / number of slices), the step compiles once (no recompile after
slicing), the losses equal one process, and the checkpoints the ranks write (their slices) merge into the
one-process final weights (load_distributed_checkpoint with parameter_layouts). With
enable_parallel_optimizer the weights the pass leaves whole are stored as dim-0 blocks too."""
import numpy as np
import pytest

import mycel
from mycel import Tensor
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.autopar_common import BATCH, STEPS
from mpi_workers.autopar_sliced_common import cases, make_step


@pytest.fixture(scope="module")
def reference():
    """Every case's losses and final weights in one process."""
    mycel.reset_auto_parallel_context()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        out = {}
        for n in (2, 4):
            for name, (_, make, (x, y), _) in cases(n).items():
                net = make()
                step = make_step(net)
                losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]),
                                     Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy()) for s in range(STEPS)]
                out[(n, name)] = (np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()})
        return out
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@requires_mpi
@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
def test_sliced_weights_train_like_one_process(reference, n, tmp_path):
    rc, log = run_mpi(n, "autopar_sliced.py", tmp_path, timeout=180)
    assert rc == 0, log
    got = dict(np.load(tmp_path / "sliced.npz"))
    for name, (_, _, _, cuts) in cases(n).items():
        losses, w = reference[(n, name)]
        np.testing.assert_allclose(got[f"{name}_losses"], losses, rtol=1e-5, atol=1e-6, err_msg=name)
        assert losses[-1] < losses[0], name
        # Sliced before the first compile: the step compiled once, for all STEPS steps.
        assert int(got[f"{name}_compiles"]) == 1, name
        assert sorted(got[f"{name}_sliced"]) == sorted(k for k, (_, c) in cuts.items() if c > 1), name
        # Per rank: each weight and its momentum, float32, cut into c slices.
        want = sum(2 * 4 * int(np.prod(shape)) // c for shape, c in cuts.values())
        assert list(got[f"{name}_bytes"]) == [want] * n, (name, want)
        for k in w:
            np.testing.assert_allclose(got[f"{name}_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"{name} {k}")
            # merged again through MindSpore's strategy file (strategy_ckpt_save_file)
            np.testing.assert_array_equal(got[f"{name}_pb_{k}"], got[f"{name}_w_{k}"], err_msg=f"{name} {k}")
    # Model.train: sliced before its loop's first compile, the same steps as the "columns" case.
    _, w = reference[(n, "columns")]
    assert int(got["model_compiles"]) == 1
    assert sorted(got["model_sliced"]) == ["w1", "w2"]
    for k in w:
        np.testing.assert_allclose(got[f"model_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"Model.train {k}")
    # A subclass with its own construct: not planned, sliced after its first step (two compiles).
    assert int(got["own_compiles"]) == 2
    assert sorted(got["own_sliced"]) == ["w1", "w2"]
    for k in w:
        np.testing.assert_allclose(got[f"own_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"own construct {k}")


@requires_mpi
def test_sliced_weights_with_parallel_optimizer(reference, tmp_path):
    """slice_parameters with enable_parallel_optimizer (graph mode): the pass slices w1 by rows,
    the optimizer shard stores the w2 it leaves whole as dim-0 blocks, gathered inside the step.
    Every weight and its momentum is then half per rank; losses and merged weights as one process."""
    rc, log = run_mpi(2, "autopar_sliced.py", tmp_path, "optshard", timeout=120)
    assert rc == 0, log
    got = dict(np.load(tmp_path / "sliced_optshard.npz"))
    losses, w = reference[(2, "reduction")]
    np.testing.assert_allclose(got["reduction_losses"], losses, rtol=1e-5, atol=1e-6)
    assert int(got["reduction_compiles"]) == 1 and int(got["optonly_compiles"]) == 1
    _, _, _, cuts = cases(2)["reduction"]
    assert sorted(got["reduction_sliced"]) == ["w1", "w2"]
    want = sum(2 * 4 * int(np.prod(shape)) // 2 for shape, _ in cuts.values())
    assert list(got["reduction_bytes"]) == [want] * 2
    for k in w:
        np.testing.assert_allclose(got[f"reduction_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # The parallel optimizer alone: both weights stored as dim-0 blocks from the first step.
    np.testing.assert_allclose(got["optonly_losses"], losses, rtol=1e-5, atol=1e-6)
    assert sorted(got["optonly_sliced"]) == ["w1", "w2"]
    assert list(got["optonly_bytes"]) == [want] * 2
    for k in w:
        np.testing.assert_allclose(got[f"optonly_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=k)
