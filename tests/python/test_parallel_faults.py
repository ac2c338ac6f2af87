"""A dead, hung or failing rank ends the whole mpirun job with an error naming it, within the
collective timeout (here 3 s, set after a first good allreduce), instead of hanging."""
import os
import time

import numpy as np
import pytest

import mycel
from mycel import Tensor
from mpi_helpers import requires_mpi, run_mpi
from mpi_workers.dp_common import BATCH, data, make_net, make_step, weights

pytestmark = requires_mpi


def _run(mode, env_timeout=False):
    start = time.monotonic()
    if env_timeout:
        rc, out = run_mpi(2, "faults.py", mode, "env", timeout=60, env={"MYCEL_COMM_TIMEOUT": "3"})
    else:
        rc, out = run_mpi(2, "faults.py", mode, 3, timeout=60)
    return rc, out, time.monotonic() - start


def test_hung_rank_times_out_naming_it():
    rc, out, took = _run("hang", env_timeout=True)
    assert rc != 0, out
    assert "RuntimeError: [all_reduce] group 'mpi_world_group'" in out, out
    assert "world rank(s) 1 did not reach this all_reduce within 3" in out, out
    assert "passed the second allreduce" not in out
    assert took < 30, f"took {took:.1f} s"


@pytest.mark.parametrize("progress", ["thread", "kernel", "wait"])
def test_hung_rank_times_out_naming_it_in_a_split_allreduce(progress):
    """Data parallel's overlap: rank 0 started an allreduce (and with a progress thread, went on
    with other work) while rank 1 hangs: the job still ends naming rank 1."""
    rc, out, took = _run(f"split_{progress}")
    assert rc != 0, out
    assert "RuntimeError: [all_reduce] group 'mpi_world_group'" in out, out
    assert "world rank(s) 1 did not reach this all_reduce within 3" in out, out
    assert "passed the second allreduce" not in out
    assert took < 30, f"took {took:.1f} s"


def test_mismatched_split_allreduces_raise_in_the_wait():
    rc, out, _ = _run("split_mismatch")
    assert rc == 0, out
    for r in (0, 1):
        assert f"rank {r} ValueError: [all_reduce] group 'mpi_world_group': ranks called mismatched" in out, out
        assert f"rank {r} usable after the mismatch" in out, out
    assert "all_reduce(op=sum) of shape (4,) float32" in out and "of shape (5,) float32" in out, out


def test_killed_rank_ends_the_job():
    rc, out, took = _run("kill")
    assert rc != 0, out
    # mpirun reports the dead process; a rank that noticed first names it in its timeout message.
    assert "rank 1" in out, out
    assert "passed the second allreduce" not in out
    assert took < 30, f"took {took:.1f} s"


def test_uncaught_exception_on_one_rank_ends_every_rank():
    rc, out, took = _run("raise")
    assert rc != 0, out
    assert "KeyError: 'rank 1 failed on purpose'" in out, out
    assert "passed the second allreduce" not in out
    assert took < 30, f"took {took:.1f} s"


def test_member_missing_from_create_group_is_named():
    rc, out, took = _run("group")
    assert rc != 0, out
    assert "[create_group] group 'mpi_world_group'" in out, out
    assert "world rank(s) 1 did not reach this create_group within 3 s" in out, out
    assert took < 30, f"took {took:.1f} s"


def test_killed_rank_leaves_the_last_complete_checkpoint_loadable(tmp_path):
    """Rank 1 dies in step 25 of a data-parallel Model.train that checkpoints every 10 steps: the
    job ends with an error, and rank 0's checkpoints of steps 10 and 20 are whole (no temp file
    left), load, and hold the weights a single process has after 20 steps on the same batches."""
    start = time.monotonic()
    rc, out = run_mpi(2, "dp_killed.py", tmp_path, timeout=90)
    assert rc != 0 and "finished training" not in out, out
    assert time.monotonic() - start < 60
    files = sorted(os.listdir(tmp_path / "ckpt_rank0"))
    ckpts = [f for f in files if f.endswith(".ckpt")]
    assert ckpts == ["mlp-1_10.ckpt", "mlp-1_20.ckpt"], files
    assert all(f.endswith((".ckpt", ".meta")) or f.startswith("mlp-graph") for f in files), files
    assert not (tmp_path / "ckpt_rank1").exists() or not os.listdir(tmp_path / "ckpt_rank1")

    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        x, y = data()
        net = make_net()
        step, _, _ = make_step(net)
        for s in range(20):
            step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH]))
        ref = weights(net)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    saved = mycel.load_checkpoint(str(tmp_path / "ckpt_rank0" / "mlp-1_20.ckpt"))
    for k, v in ref.items():
        np.testing.assert_allclose(saved[k].asnumpy(), v, rtol=1e-5, atol=1e-6, err_msg=k)
