"""Argument checks and axis arithmetic of ops.norm / matrix_norm / vector_norm (ops/norms.py):
plain Python on ords, dims and shapes, so in graph mode they run at compile time (mycel.common is
not parsed)."""
_INF = float("inf")
MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, _INF, -_INF)


def vector_axes(ord, dim):  # noqa: A002 (MindSpore's name)
    """dim as the registry's axis tuple (empty: every dim), after checking ord is a number."""
    if isinstance(ord, (str, bool)) or not isinstance(ord, (int, float)):
        raise ValueError(f"[vector_norm] ord must be a number (inf, -inf, 0, 1, 2, ...), got {ord!r}")
    if dim is None:
        return ()
    return (dim,) if isinstance(dim, int) else tuple(dim)


def matrix_plan(ord, dim, shape):  # noqa: A002
    """(perm, keep_axes) for a matrix norm over the two dims `dim` of a tensor of `shape`: perm
    moves them last (None if they are), keep_axes are where keepdim puts them back."""
    if ord not in MATRIX_ORDS or isinstance(ord, bool):
        raise ValueError(f"[matrix_norm] ord must be 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got {ord!r}")
    nd = len(shape)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) != 2 or nd < 2 or any(not -nd <= d < nd for d in dims):
        raise ValueError(f"[matrix_norm] dim must name two dims of a tensor of rank >= 2, got dim {dim!r} for "
                         f"shape {tuple(shape)}")
    d0, d1 = dims[0] % nd, dims[1] % nd
    if d0 == d1:
        raise ValueError(f"[matrix_norm] dim must name two different dims, got {dim!r}")
    perm = None if (d0, d1) == (nd - 2, nd - 1) else tuple(i for i in range(nd) if i not in (d0, d1)) + (d0, d1)
    return perm, tuple(sorted((d0, d1)))


def norm_kind(ord, dim, shape):  # noqa: A002
    """'vector' or 'matrix': which norm ops.norm takes (numpy.linalg.norm's rule), and its dim."""
    dims = () if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if ord is None:
        return ("matrix", dims) if len(dims) == 2 else ("vector", dim)
    if len(dims) == 1 or (dim is None and len(shape) == 1):
        if isinstance(ord, str):
            raise ValueError(f"[norm] ord '{ord}' is a matrix norm; a vector norm takes a number")
        return "vector", dim
    if len(dims) == 2 or (dim is None and len(shape) == 2):
        return "matrix", (-2, -1) if dim is None else dims
    raise ValueError(f"[norm] with ord set, A must be 1-d or 2-d, or dim must name one or two dims; got shape "
                     f"{tuple(shape)} and dim {dim!r}")
