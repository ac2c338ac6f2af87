"""Shape arithmetic of index ops, evaluated in Python on shapes (so at compile time in graph
mode, where mycel.common is not parsed)."""


def scatter_nd_geometry(rank, tail, k):
    """(row_size, strides) of scattering whole slices at k-dim indices into a tensor of `rank`
    whose dims after the first are `tail`: row_size = prod(shape[k:]), strides of the first k
    dims in rows. The first dim is not needed, so it may be known only at run time."""
    if k > rank:
        raise ValueError(f"tensor_scatter_update: indices.shape[-1] ({k}) must be at most the rank of "
                         f"input_x ({rank})")
    shape = (None,) + tuple(tail)
    size = 1
    for d in shape[k:]:
        size *= d
    strides, s = [], 1
    for d in reversed(shape[1:k]):
        strides.insert(0, s)
        s *= d
    strides.insert(0, s)
    return size, tuple(strides[:k])


def along_dim_shapes(x_shape, idx_shape, dim):
    """(x target shape, index target shape) of take_along_dim: both broadcast on every axis but
    `dim`, where each keeps its own length (numpy.take_along_axis)."""
    if len(x_shape) != len(idx_shape):
        raise ValueError(f"take_along_dim: input {tuple(x_shape)} and indices {tuple(idx_shape)} must have "
                         "the same rank")
    n = len(x_shape)
    dim %= n
    out_x, out_i = [], []
    for d in range(n):
        if d == dim:
            out_x.append(x_shape[d])
            out_i.append(idx_shape[d])
            continue
        a, b = x_shape[d], idx_shape[d]
        if a != b and 1 not in (a, b):
            raise ValueError(f"take_along_dim: input {tuple(x_shape)} and indices {tuple(idx_shape)} do not "
                             f"broadcast on dim {d}")
        out_x.append(max(a, b))
        out_i.append(max(a, b))
    return tuple(out_x), tuple(out_i), dim


def channel_keep_shape(shape, spatial):
    """The shape of a channel dropout's keep mask: shape with its `spatial` trailing axes set to 1
    (one draw per (N, C) channel, broadcast over its positions)."""
    return tuple(shape[:len(shape) - spatial]) + (1,) * spatial


def interpolate_size(who, shape, size, scale_factor):
    """The (H_out, W_out) of interpolate/Upsample: `size` (an int or a pair), or floor of the
    input's (H, W) times scale_factor (a number or a pair); exactly one of them."""
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{who}: give exactly one of size and scale_factor")
    if size is not None:
        out = (size, size) if isinstance(size, int) else tuple(size)
    else:
        sf = (scale_factor, scale_factor) if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        if len(sf) != 2 or any(s <= 0 for s in sf):
            raise ValueError(f"{who}: scale_factor must be a positive number or a pair of them, got {scale_factor!r}")
        out = tuple(int(d * s) for d, s in zip(shape[-2:], sf))
    if len(out) != 2 or any(not isinstance(d, int) or d < 1 for d in out):
        raise ValueError(f"{who}: the output size must be two ints >= 1, got {out!r}")
    return out


def broadcast_shape(a, b, op):
    """numpy's broadcast of shapes a and b, raising ValueError naming op when they do not."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise ValueError(f"{op}: shapes {a} and {b} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)
