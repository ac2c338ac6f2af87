"""Compile-time shape arithmetic for imported ONNX graphs: each function takes static shapes and
constant attributes and returns the attributes of a Mycel op. The importer passes them to graph
mode wrapped in functools.partial, so analysis evaluates them on constants instead of parsing
them as graph code."""
import functools


def _norm(axis, rank, what):
    if not -rank <= axis < rank:
        raise ValueError(f"ONNX {what}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def reshape_target(shape, target, allowzero):
    """ONNX Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    out = [shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(target)]
    return tuple(out)


def unsqueeze_shape(shape, axes):
    rank = len(shape) + len(axes)
    out = list(shape)
    for a in sorted(_norm(a, rank, "Unsqueeze") for a in axes):
        out.insert(a, 1)
    return tuple(out)


def squeeze_shape(shape, axes):
    if axes is None:
        return tuple(d for d in shape if d != 1)
    drop = {_norm(a, len(shape), "Squeeze") for a in axes}
    for a in drop:
        if shape[a] != 1:
            raise ValueError(f"ONNX Squeeze: dim {a} of {tuple(shape)} is {shape[a]}, not 1")
    return tuple(d for i, d in enumerate(shape) if i not in drop)


def flatten_shape(shape, axis):
    axis = axis + len(shape) if axis < 0 else axis
    outer = 1
    for d in shape[:axis]:
        outer *= d
    inner = 1
    for d in shape[axis:]:
        inner *= d
    return (outer, inner)


def reduce_axes(rank, axes, noop_with_empty_axes):
    """Axes of an ONNX reduction; () means all unless noop_with_empty_axes (then None: identity)."""
    if not axes:
        return None if noop_with_empty_axes else tuple(range(rank))
    return tuple(sorted(_norm(a, rank, "Reduce") for a in axes))


def reduces_empty(shape, axes):
    """Whether an ONNX reduction over `axes` (None: all) of `shape` reduces an empty set."""
    dims = range(len(shape)) if axes is None else axes
    return any(shape[a] == 0 for a in dims)


def reduced_shape(shape, axes, keepdims):
    dims = set(range(len(shape))) if axes is None else set(axes)
    return tuple(1 if i in dims else d for i, d in enumerate(shape) if keepdims or i not in dims)


def reduce_identity(op, dtype):
    """ReduceMax/ReduceMin of an empty set (ONNX): -inf/+inf, an integer type's min/max, False/True."""
    import numpy as np
    name = str(dtype).lower().replace("mycel.", "")
    if name in ("bool", "bool_"):
        return 0.0 if op == "max" else 1.0
    if "int" in name:
        info = np.iinfo(np.dtype(name))
        return float(info.min if op == "max" else info.max)
    return float("-inf") if op == "max" else float("inf")


def spatial_axes(rank):
    return tuple(range(2, rank))


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def reverse_spatial(shape):
    return tuple(shape[:2]) + tuple(reversed(shape[2:]))


def bn_axes(shape):
    """Every axis but the channels' (1): BatchNormalization's statistics."""
    return (0,) + tuple(range(2, len(shape)))


def bn_channel_shape(shape):
    return (1, shape[1]) + (1,) * (len(shape) - 2)


def rank_of(shape):
    return len(shape)


def perm_or_reverse(rank, perm):
    return tuple(perm) if perm else tuple(reversed(range(rank)))


def slice_args(shape, starts, ends, axes, steps):
    """strided_slice begin, end, strides and end_mask of an ONNX Slice, clamped as ONNX says."""
    rank = len(shape)
    begin, end, stride = [0] * rank, list(shape), [1] * rank
    axes = list(axes) if axes else list(range(len(starts)))
    steps = list(steps) if steps else [1] * len(starts)
    mask = 0
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _norm(a, rank, "Slice")
        n = shape[a]
        if st == 0:
            raise ValueError("ONNX Slice: step 0")
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
        else:
            s, e = min(max(s, -1), n - 1), min(max(e, -1), n - 1)
        begin[a], end[a], stride[a] = s, e, st
        if st < 0 and e == -1:  # runs past index 0: only the end mask says so to strided_slice
            mask |= 1 << a
    return tuple(begin), tuple(end), tuple(stride), mask


def window_pads(shape, kernel, strides, dilations, auto_pad, pads, ceil_mode):
    """Explicit (top, bottom, left, right) padding of a 2-d ONNX window op: SAME_UPPER/LOWER
    computed from the input size, and ceil_mode turned into extra end padding (a last window
    must start inside the input or its left padding, as ONNX says)."""
    out = []
    ends = []
    for i in range(2):
        n, k, s, d = shape[2 + i], kernel[i], strides[i], dilations[i]
        ek = d * (k - 1) + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-n // s)
            total = max((o - 1) * s + ek - n, 0)
            small = total // 2
            p0, p1 = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
        elif auto_pad == "VALID":
            p0 = p1 = 0
        else:
            p0, p1 = pads[i], pads[i + 2]
        if ceil_mode:
            span = n + p0 + p1 - ek
            o = -(-span // s) + 1
            if (o - 1) * s >= n + p0:
                o -= 1
            p1 += max((o - 1) * s + ek - (n + p0 + p1), 0)
        out.append((p0, p1))
        ends.append(p1)
    return (out[0][0], out[0][1], out[1][0], out[1][1])


def pool_pads(shape, kernel, strides, dilations, auto_pad, pads, ceil_mode):
    """Per spatial dim of an N-d ONNX pooling: (begin pad, end pad, ceil overhang, output size).
    The overhang is the end padding ceil_mode adds past the explicit pads (never counted)."""
    nd = len(kernel)
    out = []
    for i in range(nd):
        n, k, s, d = shape[2 + i], kernel[i], strides[i], dilations[i]
        ek = d * (k - 1) + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-n // s)
            total = max((o - 1) * s + ek - n, 0)
            small = total // 2
            p0, p1 = (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)
        elif auto_pad == "VALID":
            p0 = p1 = 0
        else:
            p0, p1 = pads[i], pads[i + nd]
        span = n + p0 + p1 - ek
        if ceil_mode:
            o = -(-span // s) + 1
            if (o - 1) * s >= n + p0:
                o -= 1
        else:
            o = span // s + 1
        out.append((p0, p1, max((o - 1) * s + ek - (n + p0 + p1), 0), o))
    return tuple(out)


def pool_flat_pads(shape, plan, with_pads, with_overhang):
    """pad's flat paddings (N and C unpadded) for a pool_pads plan: the explicit pads and/or the
    ceil overhang."""
    flat = [0, 0, 0, 0]
    for p0, p1, extra, _ in plan:
        flat += [p0 if with_pads else 0, (p1 if with_pads else 0) + (extra if with_overhang else 0)]
    return tuple(flat)


def pool_slice(shape, plan, offset, strides, dilations):
    """strided_slice begin, end, strides of one kernel offset's taps over the padded input."""
    begin, end, step = [0, 0], list(shape[:2]), [1, 1]
    for (p0, p1, extra, o), k, s, d in zip(plan, offset, strides, dilations):
        begin.append(k * d)
        end.append(k * d + (o - 1) * s + 1)
        step.append(s)
    return tuple(begin), tuple(end), tuple(step)


def reverse_args(shape, axis):
    """strided_slice begin, end, strides, end_mask that reverse `axis`."""
    rank = len(shape)
    a = _norm(axis, rank, "ArgMax")
    begin, end, stride = [0] * rank, list(shape), [1] * rank
    begin[a], end[a], stride[a] = shape[a] - 1, -1, -1
    return tuple(begin), tuple(end), tuple(stride), 1 << a


def dim(shape, axis):
    return shape[_norm(axis, len(shape), "dim")]


def stat_shape(shape, axis):
    """Shape of LayerNormalization's Mean/InvStdDev: the normalized dims set to 1."""
    a = _norm(axis, len(shape), "LayerNormalization")
    return tuple(d if i < a else 1 for i, d in enumerate(shape))


def dropout_mask(shape, ratio, seed):
    """ONNX Dropout's mask for a given seed, as ONNX's reference implementation draws it (numpy's
    MT19937): uniform doubles in [0, 1), kept where >= ratio. A constant of the compiled program."""
    import numpy as np
    from mycel.common.tensor import Tensor
    if any(d is None or d < 0 for d in shape):
        raise ValueError(f"ONNX Dropout with a seed: the input's shape {tuple(shape)} must be static")
    return Tensor(np.random.RandomState(seed).uniform(0.0, 1.0, tuple(shape)) >= ratio)


# What generated code calls: opaque callables, evaluated on constants at compile time.
RULES = {name: functools.partial(fn) for name, fn in list(globals().items())
         if callable(fn) and not name.startswith("_") and fn.__module__ == __name__}
