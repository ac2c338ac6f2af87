"""Shape arithmetic of index ops, evaluated in Python on shapes (so at compile time in graph
mode, where mycel.common is not parsed)."""


def scatter_nd_geometry(shape, k):
    """(rows, row_size, strides) of scattering whole slices at k-dim indices into `shape`:
    rows = prod(shape[:k]), row_size = prod(shape[k:]), strides of the first k dims in rows."""
    if k > len(shape):
        raise ValueError(f"tensor_scatter_update: indices.shape[-1] ({k}) must be at most the rank of "
                         f"input_x {tuple(shape)}")
    rows, size = 1, 1
    for d in shape[:k]:
        rows *= d
    for d in shape[k:]:
        size *= d
    strides, s = [], 1
    for d in reversed(shape[:k]):
        strides.insert(0, s)
        s *= d
    return rows, size, tuple(strides)
