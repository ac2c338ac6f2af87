"""Reduction kinds of the collective ops (MindSpore's ops.ReduceOp): ops.AllReduce(op=ReduceOp.SUM)."""


class ReduceOp:
    """How AllReduce, ReduceScatter and Reduce combine the ranks' tensors."""
    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"
