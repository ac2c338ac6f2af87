"""A dead, hung or failing rank ends the whole mpirun job with an error naming it, within the
collective timeout (here 3 s, set after a first good allreduce), instead of hanging."""
import time

from mpi_helpers import requires_mpi, run_mpi

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
