"""Argument checks for layers that run in both modes. Functions of mycel.common are not parsed by
graph mode: called with compile-time values (shapes, ranks, dtypes) they run while compiling, so
a layer's construct can check its input's rank and raise a clear error in GRAPH_MODE too."""


def check_rank(who, arg, rank, allowed):
    """Raises ValueError unless `rank` is one of `allowed`; returns rank."""
    if rank not in allowed:
        want = " or ".join(str(a) for a in allowed)
        raise ValueError(f"{who}: input '{arg}' must be {want}-D, got {rank}-D")
    return rank
