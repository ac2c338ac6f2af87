"""Launching real multi-process jobs under Open MPI's mpirun for the test_parallel_* tests: a
hard timeout kills the whole process group, so a hung job fails the test instead of the suite."""
import os
import shutil
import signal
import subprocess
import sys

import pytest

from mycel import _mycel

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKERS = os.path.join(os.path.dirname(__file__), "mpi_workers")

requires_mpi = pytest.mark.skipif(
    shutil.which("mpirun") is None or not _mycel.comm.built_with_mpi(),
    reason="needs Open MPI's mpirun (apt install openmpi-bin libopenmpi-dev) and a build with MYCEL_WITH_MPI")


def run_mpi(n, worker, *args, timeout=60, env=None):
    """Runs tests/python/mpi_workers/<worker> on n ranks; returns (returncode, stdout + stderr)."""
    cmd = [os.path.join(ROOT, "scripts", "mpirun"), "-n", str(n), sys.executable,
           os.path.join(WORKERS, worker), *map(str, args)]
    full_env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", PYTHONPATH=os.path.dirname(__file__))
    full_env.update(env or {})
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"mpirun -n {n} {worker} did not end within {timeout} s; output:\n{out}")
    return p.returncode, out
