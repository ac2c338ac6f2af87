"""Collectives on 2 and 4 real Open MPI ranks (mpirun): every op against numpy on every rank, in
eager and graph mode, gradients against finite differences, groups, send/receive, and a
mismatched call reported on all ranks (the checks run in mpi_workers/collectives.py)."""
import re

import pytest

from mpi_helpers import requires_mpi, run_mpi

pytestmark = requires_mpi


@pytest.mark.parametrize("ranks", [2, 4])
def test_collectives_match_numpy_on_every_rank(ranks):
    rc, out = run_mpi(ranks, "collectives.py", timeout=120)
    assert rc == 0, out
    done = re.findall(r"rank (\d+) ok: (\d+) checks", out)
    assert sorted(int(r) for r, _ in done) == list(range(ranks)), out
    assert all(int(n) > 50 for _, n in done), out
