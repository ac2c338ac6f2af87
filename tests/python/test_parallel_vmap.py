"""Collectives under ops.vmap on 2 real Open MPI ranks: one call over the batch (the checks run
in mpi_workers/vmap_collectives.py); a collective without a rule is still refused."""
import re

import numpy as np
import pytest

from mycel import Tensor, ops
from mpi_helpers import requires_mpi, run_mpi


@requires_mpi
def test_collectives_under_vmap_on_two_ranks():
    rc, out = run_mpi(2, "vmap_collectives.py", timeout=120)
    assert rc == 0, out
    done = re.findall(r"rank (\d+) ok: (\d+) checks", out)
    assert sorted(int(r) for r, _ in done) == [0, 1] and all(int(n) == 7 for _, n in done), out


def test_collective_without_a_rule_is_refused():
    import mycel.communication as comm
    comm.init()  # a world of one (as op_cases/collective.py): no MPI is started without mpirun
    with pytest.raises(NotImplementedError, match="send' talks to other processes"):
        ops.vmap(ops.Send(0, 0))(Tensor(np.ones((2, 3), np.float32)))
