"""Collective ops in a world of one process (no mpirun): each is the identity on its input.
Their multi-rank behaviour is tested under mpirun in test_parallel_collectives.py."""
import numpy as np

import mycel.communication as comm
from . import OpCase

comm.init()  # a world of one: no MPI is started without mpirun

_ALL = ("int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")
_NUMERIC_AND_BOOL = _ALL + ("bool",)


def _same(x, **_):
    return x


CASES = [
    OpCase("all_reduce", _same, [(2, 3)], dtypes=_ALL),
    OpCase("all_reduce", _same, [(2, 3)], {"reduce_op": "max"}, dtypes=_NUMERIC_AND_BOOL, id="max"),
    OpCase("all_reduce", _same, [()], {"op": "min"}, id="0d-min"),
    OpCase("all_gather", _same, [(2, 3)], dtypes=_NUMERIC_AND_BOOL),
    OpCase("reduce_scatter", _same, [(2, 3)], dtypes=_ALL),
    OpCase("reduce_scatter", _same, [(4,)], {"reduce_op": "max"}, dtypes=("bool", "float32"), id="max"),
    OpCase("broadcast", _same, [(2, 3)], {"root_rank": 0}, dtypes=_NUMERIC_AND_BOOL),
    OpCase("reduce", _same, [(2, 3)], {"dest_rank": 0}, dtypes=_ALL),
    OpCase("reduce", _same, [(2,)], {"dest_rank": 0, "reduce_op": "max"}, dtypes=("bool",), id="max"),
    OpCase("all_to_all", _same, [(2, 3)], {"split_count": 1, "split_dim": 1, "concat_dim": 0},
           dtypes=_NUMERIC_AND_BOOL),
    OpCase("barrier", lambda: np.array(0, np.int32), [], dtypes=("int32",)),
    # The split allreduce: a start is only meaningful with its wait (and a wait needs a start),
    # so these rows only claim the dtypes; test_parallel_overlap.py runs them together.
    OpCase("all_reduce_start", _same, [(2, 3)], dtypes=_NUMERIC_AND_BOOL, needs_peer=True),
    OpCase("all_reduce_wait", _same, [(2, 3)], dtypes=_NUMERIC_AND_BOOL, needs_peer=True),
    # send/receive need a peer: their rows only claim the dtypes (tested under mpirun).
    OpCase("send", _same, [(2,)], {"sr_tag": 0, "dest_rank": 1}, dtypes=_NUMERIC_AND_BOOL, needs_peer=True),
    OpCase("receive", _same, [], {"sr_tag": 0, "src_rank": 1, "shape": (2,)}, dtypes=_NUMERIC_AND_BOOL,
           needs_peer=True),
]
