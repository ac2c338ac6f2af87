"""Gradient rows of the collectives in a world of one (each rule is then the identity map);
the multi-rank gradients are checked under mpirun in test_parallel_collectives.py."""
import mycel.communication as comm
from . import GradCase

comm.init()

CASES = [
    GradCase("all_reduce", [(2, 3)]),
    GradCase("all_reduce", [(2, 3)], {"reduce_op": "max"}, id="max"),
    GradCase("all_reduce", [(2, 3)], {"reduce_op": "prod"}, domain="away0", id="prod"),
    GradCase("all_gather", [(2, 3)]),
    GradCase("reduce_scatter", [(2, 3)]),
    GradCase("broadcast", [(2, 3)], {"root_rank": 0}),
    GradCase("reduce", [(2, 3)], {"dest_rank": 0}),
    GradCase("all_to_all", [(2, 3)], {"split_count": 1, "split_dim": 1, "concat_dim": 0}),
]
