"""Weights stored as slices (set_auto_parallel_context(slice_parameters=True), issue 13) under
real mpirun: after the first step each rank keeps only its slice of every weight the sharding
pass splits (and of its Momentum state); gradients of a slice are reduced over the ranks holding
it. Checked: each rank's parameter bytes equal the closed form (whole bytes / number of slices),
the losses equal one process, and the checkpoints the ranks write (their slices) merge into the
one-process final weights (load_distributed_checkpoint with parameter_layouts)."""
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
        assert sorted(got[f"{name}_sliced"]) == sorted(k for k, (_, c) in cuts.items() if c > 1), name
        # Per rank: each weight and its momentum, float32, cut into c slices.
        want = sum(2 * 4 * int(np.prod(shape)) // c for shape, c in cuts.values())
        assert list(got[f"{name}_bytes"]) == [want] * n, (name, want)
        for k in w:
            np.testing.assert_allclose(got[f"{name}_w_{k}"], w[k], rtol=1e-5, atol=1e-6, err_msg=f"{name} {k}")
