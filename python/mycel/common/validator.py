"""Argument checks for layers that run in both modes. Functions of mycel.common are not parsed by
graph mode: called with compile-time values (shapes, ranks, dtypes) they run while compiling, so
a layer's construct can check its input's rank and raise a clear error in GRAPH_MODE too."""


def check_rank(who, arg, rank, allowed):
    """Raises ValueError unless `rank` is one of `allowed`; returns rank."""
    if rank not in allowed:
        want = " or ".join(str(a) for a in allowed)
        raise ValueError(f"{who}: input '{arg}' must be {want}-D, got {rank}-D")
    return rank


def check_dim(who, arg, got, want, what):
    """Raises ValueError unless a dimension `got` equals `want` (what names the expectation)."""
    if got != want:
        raise ValueError(f"{who}: {arg} must have {what} ({want}), got {got}")
    return got


def flatten_shape(shape, start, end):
    """`shape` with dims start..end merged into one (Flatten)."""
    rank = len(shape)
    s, e = start + rank if start < 0 else start, end + rank if end < 0 else end
    if not (0 <= s < max(rank, 1) and 0 <= e < max(rank, 1)) or s > e:
        raise ValueError(f"Flatten: start_dim {start} and end_dim {end} do not fit a rank-{rank} input")
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return tuple(shape[:s]) + (n,) + tuple(shape[e + 1:])


def adaptive_output_size(shape, output_size):
    """AdaptiveAvgPool2d's output size with None entries taken from the input's (h, w)."""
    return tuple(shape[-2 + i] if v is None else v for i, v in enumerate(output_size))


def is_bool_dtype(dtype):
    """True for the bool dtype (attention masks: bool masks select, float masks add)."""
    return getattr(dtype, "name", str(dtype)) == "bool"


def check_supported(who, arg, ok):
    """Raises NotImplementedError naming the argument when `ok` is False."""
    if not ok:
        raise NotImplementedError(f"{who}: argument '{arg}' is not supported yet")
    return ok


def channels_last_perm(rank):
    """The permutation moving dim 1 (channels) last: (0, 2, ..., rank-1, 1)."""
    return (0,) + tuple(range(2, rank)) + (1,)


def append_dim(shape, n):
    """shape + (n,)."""
    return tuple(shape) + (n,)


def not_tensor_error(who, arg, value, expected="a Tensor"):
    """The TypeError for a non-Tensor argument of a Python-level op. Ops call it as
    `if not isinstance(x, Tensor): raise not_tensor_error(...)`: graph mode folds isinstance of
    a traced tensor to True, so the check costs nothing in a compiled step. A tuple or list is
    shown with the types of its items."""
    got = type(value).__name__
    if isinstance(value, (tuple, list)):
        got += " of (" + ", ".join(type(v).__name__ for v in value) + ")"
    return TypeError(f"[{who}] input '{arg}' must be {expected}, got {got}")
