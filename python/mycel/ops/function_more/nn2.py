"""MindSpore 2.x's functional pooling, unpooling, convolution, normalization and loss ops that
nn.py lacks (issue 14): compositions of registry ops, so gradients, vmap and graph mode come
with them. Window geometry is computed on shapes in @constexpr helpers (compile time in graph
mode)."""
import numpy as np

import mycel.ops as _P  # the Python-level ops (masked_select, nonzero, ...); this package loads last
from mycel import _mycel
from mycel.common.dtype import float32, int32, int64, bool_
from mycel.common.tensor import Tensor
from mycel.ops.function_more.nn import _reduce  # one reduction rule for every loss
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


# ---- geometry (compile time) ---------------------------------------------------------------------
@constexpr
def _ints(who, arg, value, n, minimum=1):
    """value as an n-tuple of ints >= minimum (an int is repeated)."""
    vals = (value,) * n if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(vals) != n or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in vals):
        raise ValueError(f"{who}: {arg} must be an int or a tuple of {n} ints >= {minimum}, got {value!r}")
    return vals


@constexpr
def _check_rank(who, arg, ndim, allowed):
    if ndim not in allowed:
        raise ValueError(f"{who}: {arg} must have rank {' or '.join(str(a) for a in allowed)}, got rank {ndim}")
    return True


@constexpr
def _adaptive_windows(who, shape, output_size):
    """Per pooled dim, the (start, length) of each window: floor(i n / o) .. ceil((i + 1) n / o)."""
    nd = len(shape)
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd or any(o is not None and (isinstance(o, bool) or not isinstance(o, int) or o < 1)
                               for o in sizes):
        raise ValueError(f"{who}: output_size must be an int or a tuple of {nd} ints >= 1 (or None), "
                         f"got {output_size!r}")
    sizes = tuple(n if o is None else o for n, o in zip(shape, sizes))
    return tuple(tuple((i * n // o, -(-(i + 1) * n // o) - i * n // o) for i in range(o))
                 for n, o in zip(shape, sizes))


@constexpr
def _pool1d_plan(who, length, kernel_size, stride, padding, ceil_mode, count_include_pad):
    """(right pad beyond padding, divisors) of a 1-d average pool with PyTorch's/MindSpore's
    ceil_mode and count_include_pad rules (the overhang never counts)."""
    k, s, p = kernel_size, stride, padding
    if p > k // 2:
        raise ValueError(f"{who}: padding ({p}) must be at most half of kernel_size ({k})")
    span = length + 2 * p - k
    if span < 0:
        raise ValueError(f"{who}: kernel_size {k} is larger than the padded length {length + 2 * p}")
    out = -(-span // s) + 1 if ceil_mode else span // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    extra = max((out - 1) * s + k - (length + 2 * p), 0)
    lo, hi = (-p, length + p) if count_include_pad else (0, length)
    counts = [max(1, min(i * s - p + k, hi) - max(i * s - p, lo)) for i in range(out)]
    return extra, Tensor(np.array(counts, np.float32))


@constexpr
def _unpool_size(who, in_spatial, kernel, stride, padding, output_size):
    """MaxUnpool's output spatial size: (in - 1) * stride - 2 * padding + kernel, or output_size."""
    nd = len(in_spatial)
    default = tuple((i - 1) * s - 2 * p + k for i, k, s, p in zip(in_spatial, kernel, stride, padding))
    if output_size is None or len(output_size) == 0:
        size = default
    else:
        size = tuple(output_size)[-nd:]
        if len(tuple(output_size)) not in (nd, nd + 1, nd + 2) or any(
                not d - s <= o <= d + s for o, d, s in zip(size, default, stride)):
            raise ValueError(f"{who}: output_size {tuple(output_size)} must give spatial sizes within stride of "
                             f"{default}")
    if min(size) < 1:
        raise ValueError(f"{who}: the output size {size} is empty (input {in_spatial}, kernel {kernel}, "
                         f"stride {stride}, padding {padding})")
    return size, int(np.prod(size))


def _batched(who, x, nd):
    """x with a batch dim added when it has only (C, spatial...), and whether one was added."""
    _check_rank(who, "input", x.ndim, (nd + 1, nd + 2))
    if x.ndim == nd + 1:
        return _ops.expand_dims(x, 0), True
    return x, False


def _unbatched(y, added):
    return _ops.squeeze(y, (0,)) if added else y


# ---- adaptive pooling ----------------------------------------------------------------------------
def _adaptive_reduce(x, plan, reduce, axis):
    """x pooled over dims axis, axis + 1, ... with the windows of plan, one dim at a time
    (mean and max are separable)."""
    for windows in plan:
        pieces = []
        for start, length in windows:
            begin = tuple(start if d == axis else 0 for d in range(x.ndim))
            size = tuple(length if d == axis else x.shape[d] for d in range(x.ndim))
            pieces.append(reduce(_ops.slice(x, begin, size), (axis,), True))
        x = _ops.concat(pieces, axis)
        axis = axis + 1
    return x


def adaptive_avg_pool1d(input, output_size):  # noqa: A002 (MindSpore's argument name)
    """Average pooling of (N, C, L) to output_size positions (windows as PyTorch's)."""
    _check_rank("adaptive_avg_pool1d", "input", input.ndim, (2, 3))
    plan = _adaptive_windows("adaptive_avg_pool1d", input.shape[-1:], output_size)
    return _adaptive_reduce(input, plan, _ops.mean, input.ndim - 1)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to output_size (None keeps a size)."""
    _check_rank("adaptive_avg_pool3d", "input", input.ndim, (4, 5))
    plan = _adaptive_windows("adaptive_avg_pool3d", input.shape[-3:], output_size)
    return _adaptive_reduce(input, plan, _ops.mean, input.ndim - 3)


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    """Max pooling of (N, C, L) to output_size positions."""
    _check_rank("adaptive_max_pool1d", "input", input.ndim, (2, 3))
    plan = _adaptive_windows("adaptive_max_pool1d", input.shape[-1:], output_size)
    return _adaptive_reduce(input, plan, _ops.max, input.ndim - 1)


@constexpr
def _adaptive_boxes(shape, plan):
    """Per adaptive window: (begin, size) of its slice of x and the flat input positions
    (row-major in the pooled dims) of its elements; and the pooled output shape."""
    nd = len(plan)
    lead, spatial = tuple(shape[:len(shape) - nd]), tuple(shape[len(shape) - nd:])
    boxes = []
    for cell in np.ndindex(*[len(w) for w in plan]):
        begin = tuple(plan[d][cell[d]][0] for d in range(nd))
        size = tuple(plan[d][cell[d]][1] for d in range(nd))
        grids = np.meshgrid(*[np.arange(b, b + n) for b, n in zip(begin, size)], indexing="ij")
        flat = np.ravel_multi_index(tuple(g.ravel() for g in grids), spatial).astype(np.int64)
        boxes.append(((0,) * len(lead) + begin, lead + size, lead + (-1,), Tensor(flat)))
    return tuple(boxes), lead + tuple(len(w) for w in plan)


def _adaptive_max_with_indices(x, plan):
    """(max, argmax) of adaptive windows over x's last len(plan) dims; argmax is the flat index
    in the input's pooled plane (row-major), int64, first maximum in a tie."""
    boxes, out_shape = _adaptive_boxes(x.shape, plan)
    values, indices = [], []
    for begin, size, flat_shape, flat in boxes:
        window = _ops.reshape(_ops.slice(x, begin, size), flat_shape)
        values.append(_ops.max(window, (-1,)))
        indices.append(_ops.gather(flat, _ops.argmax(window, -1), 0))
    return (_ops.reshape(_ops.stack(values, -1), out_shape),
            _ops.reshape(_ops.stack(indices, -1), out_shape))


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling of (N, C, H, W) or (C, H, W) to output_size; with return_indices also the
    int64 position h * W + w of each maximum in its input plane."""
    _check_rank("adaptive_max_pool2d", "input", input.ndim, (3, 4))
    plan = _adaptive_windows("adaptive_max_pool2d", input.shape[-2:], output_size)
    if return_indices:
        return _adaptive_max_with_indices(input, plan)
    return _adaptive_reduce(input, plan, _ops.max, input.ndim - 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to output_size; with return_indices also
    the int64 flat position (d * H + h) * W + w of each maximum."""
    _check_rank("adaptive_max_pool3d", "input", input.ndim, (4, 5))
    plan = _adaptive_windows("adaptive_max_pool3d", input.shape[-3:], output_size)
    if return_indices:
        return _adaptive_max_with_indices(input, plan)
    return _adaptive_reduce(input, plan, _ops.max, input.ndim - 3)


# ---- 1-d and power-average pooling ---------------------------------------------------------------
def avg_pool1d(input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over kernel_size windows of (N, C, L)'s last dim; padding zeros on both sides count in
    the divisor when count_include_pad, a ceil_mode overhang never does."""
    who = "avg_pool1d"
    _check_rank(who, "input_x", input_x.ndim, (2, 3))
    k = _ints(who, "kernel_size", kernel_size, 1)[0]
    s = _ints(who, "stride", stride, 1)[0]
    p = _ints(who, "padding", padding, 1, 0)[0]
    extra, counts = _pool1d_plan(who, input_x.shape[-1], k, s, p, ceil_mode, count_include_pad)
    x = _ops.pad(input_x, (0, 0) * (input_x.ndim - 1) + (p, p + extra)) if p or extra else input_x
    x4 = _ops.expand_dims(x, -2) if x.ndim == 3 else _ops.expand_dims(_ops.expand_dims(x, 0), 0)
    sums = _ops.avg_pool2d(x4, kernel_size=(1, k), strides=(1, s)) * float(k)
    y = sums / _ops.cast(counts, input_x.dtype)
    return _ops.squeeze(y, (2,)) if input_x.ndim == 3 else _ops.squeeze(y, (0, 1, 2))


def _lp_finish(avg_pow, area, norm_type):
    # sign(s) * relu(|s|) keeps the p-th root real for odd p with negative sums (MindSpore's form)
    return _ops.pow(_ops.sign(avg_pow) * _ops.relu(_ops.abs(avg_pow)) * float(area), 1.0 / norm_type)


def lp_pool1d(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x^p over each window) ** (1 / p) on (N, C, L) or (C, L)."""
    s = kernel_size if stride is None else stride
    avg = avg_pool1d(_ops.pow(x, float(norm_type)), kernel_size, s, 0, ceil_mode, True)
    return _lp_finish(avg, _ints("lp_pool1d", "kernel_size", kernel_size, 1)[0], float(norm_type))


def lp_pool2d(x, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x^p over each window) ** (1 / p) on (N, C, H, W)."""
    who = "lp_pool2d"
    _check_rank(who, "x", x.ndim, (4,))
    k = _ints(who, "kernel_size", kernel_size, 2)
    s = k if stride is None else _ints(who, "stride", stride, 2)
    xp = _ops.pow(x, float(norm_type))
    if ceil_mode:  # zeros in the overhang add nothing to a window's sum
        extra_h, _ = _pool1d_plan(who, x.shape[2], k[0], s[0], 0, True, True)
        extra_w, _ = _pool1d_plan(who, x.shape[3], k[1], s[1], 0, True, True)
        xp = _ops.pad(xp, (0, 0, 0, 0, 0, extra_h, 0, extra_w))
    avg = _ops.avg_pool2d(xp, kernel_size=k, strides=s)
    return _lp_finish(avg, k[0] * k[1], float(norm_type))


# ---- unpooling -----------------------------------------------------------------------------------
def _max_unpool(who, x, indices, nd, kernel_size, stride, padding, output_size):
    x, added = _batched(who, x, nd)
    indices, _ = _batched(who, indices, nd)
    if tuple(indices.shape) != tuple(x.shape):
        raise ValueError(f"{who}: indices must have the shape of x {tuple(x.shape)}, got {tuple(indices.shape)}")
    k = _ints(who, "kernel_size", kernel_size, nd)
    s = k if stride is None else _ints(who, "stride", stride, nd)
    p = _ints(who, "padding", padding, nd, 0)
    size, total = _unpool_size(who, tuple(x.shape[2:]), k, s, p, output_size)
    n, c = x.shape[0], x.shape[1]
    flat_x = _ops.reshape(x, (n, c, -1))
    flat_i = _ops.cast(_ops.reshape(indices, (n, c, -1)), int64)
    # out-of-range indices: the scatter's own bounds check raises IndexError
    out = _ops.tensor_scatter_elements(_ops.zeros((n, c, total), x.dtype), flat_i, flat_x, 2)
    return _unbatched(_ops.reshape(out, (n, c) + tuple(size)), added)


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value of x placed at its index (a position in
    the output length), zeros elsewhere."""
    return _max_unpool("max_unpool1d", x, indices, 1, kernel_size, stride, padding, output_size)


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: values placed at their flat indices h * W_out + w."""
    return _max_unpool("max_unpool2d", x, indices, 2, kernel_size, stride, padding, output_size)


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: values placed at flat indices (d * H_out + h) * W_out + w."""
    return _max_unpool("max_unpool3d", x, indices, 3, kernel_size, stride, padding, output_size)


# ---- fractional max pooling ----------------------------------------------------------------------
@constexpr
def _fractional_plan(who, spatial, kernel_size, output_size, output_ratio):
    k = _ints_now(who, "kernel_size", kernel_size, 3)
    if output_size is not None:
        out = _ints_now(who, "output_size", output_size, 3)
    elif output_ratio is not None:
        ratio = (output_ratio,) * 3 if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        if len(ratio) != 3 or any(not 0 < r < 1 for r in ratio):
            raise ValueError(f"{who}: output_ratio must be a float or 3 floats in (0, 1), got {output_ratio!r}")
        out = tuple(int(n * r) for n, r in zip(spatial, ratio))
    else:
        raise ValueError(f"{who}: give output_size or output_ratio")
    for n, o, kk in zip(spatial, out, k):
        if o < 1 or o + kk - 1 > n:
            raise ValueError(f"{who}: output size {out} with kernel_size {k} does not fit input {spatial} "
                             f"(need output + kernel_size - 1 <= input)")
    return k, out


def _ints_now(who, arg, value, n, minimum=1):
    vals = (value,) * n if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(vals) != n or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in vals):
        raise ValueError(f"{who}: {arg} must be an int or a tuple of {n} ints >= {minimum}, got {value!r}")
    return vals


@constexpr
def _arange_f32(n):
    return Tensor(np.arange(n, dtype=np.float32))


def _fractional_starts(u, n, o, k):
    """Window starts of one dim for samples u (..., 1): floor((i + u) a) - floor(u a) with
    a = (n - k) / (o - 1), and the last window at n - k (PyTorch's/MindSpore's sequence)."""
    if o == 1:
        return _ops.zeros_like(u) * 0.0 + float(n - k)
    alpha = (n - k) / (o - 1)
    i = _arange_f32(o - 1)
    starts = _ops.floor((i + u) * alpha) - _ops.floor(u * alpha)
    last = _ops.zeros_like(u) + float(n - k)
    return _ops.concat((starts, last), -1)


def _fractional_taps(u, dim, n, c, size, o, k):
    """(N, C, o, k) int64 input positions of dim's boxes, from the samples u[..., dim]."""
    starts = _fractional_starts(_ops.slice(u, (0, 0, dim), (n, c, 1)), size, o, k)
    return _ops.cast(_ops.expand_dims(starts, -1) + _arange_f32(k), int64)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    """Max over pseudo-random kernel_size boxes whose starts step by about input / output
    (Graham's fractional pooling) on (N, C, D, H, W) or (C, D, H, W). _random_samples
    (N, C, 3) in [0, 1) fixes the boxes (drawn uniformly when None); return_indices also gives
    each maximum's flat position (d * H + h) * W + w, int64."""
    who = "fractional_max_pool3d"
    x, added = _batched(who, input, 3)
    n, c, d, h, w = x.shape
    k, out = _fractional_plan(who, (d, h, w), kernel_size, output_size, output_ratio)
    if _random_samples is None:
        samples = _ops.uniform((n, c, 3), 0.0, 1.0)
    else:
        samples = _random_samples if _random_samples.ndim == 3 else _ops.expand_dims(_random_samples, 0)
        if tuple(samples.shape) != (n, c, 3):
            raise ValueError(f"{who}: _random_samples must have shape ({n}, {c}, 3), got {tuple(_random_samples.shape)}")
    u = _ops.cast(samples, float32)
    # per dim: (N, C, out, k) input positions of each box, then the flat positions of the boxes
    pos = (_fractional_taps(u, 0, n, c, d, out[0], k[0]), _fractional_taps(u, 1, n, c, h, out[1], k[1]),
           _fractional_taps(u, 2, n, c, w, out[2], k[2]))
    pd = _ops.reshape(pos[0], (n, c, out[0], 1, 1, k[0], 1, 1))
    ph = _ops.reshape(pos[1], (n, c, 1, out[1], 1, 1, k[1], 1))
    pw = _ops.reshape(pos[2], (n, c, 1, 1, out[2], 1, 1, k[2]))
    flat = (pd * h + ph) * w + pw                                            # (N, C, oD, oH, oW, kD, kH, kW)
    flat = _ops.reshape(flat, (n, c, out[0] * out[1] * out[2], k[0] * k[1] * k[2]))
    src = _ops.reshape(x, (n, c, d * h * w))
    vals = _ops.gather_elements(src, _ops.reshape(flat, (n, c, -1)), dim=2)
    vals = _ops.reshape(vals, (n, c, out[0] * out[1] * out[2], k[0] * k[1] * k[2]))
    y = _unbatched(_ops.reshape(_ops.max(vals, (-1,)), (n, c) + tuple(out)), added)
    if not return_indices:
        return y
    arg = _ops.expand_dims(_ops.argmax(vals, -1), -1)
    idx = _ops.reshape(_ops.gather_elements(flat, arg, dim=3), (n, c) + tuple(out))
    return y, _unbatched(idx, added)


# ---- convolution, bias, bilinear -----------------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, pad_mode="valid", padding=0, dilation=1, groups=1):  # noqa: A002
    """1-d convolution of (N, C_in, L) by weight (C_out, C_in / groups, k): conv2d on (N, C, 1, L)."""
    who = "conv1d"
    _check_rank(who, "input", input.ndim, (3,))
    _check_rank(who, "weight", weight.ndim, (3,))
    if pad_mode not in ("valid", "same", "pad"):
        raise ValueError(f"{who}: pad_mode must be 'valid', 'same' or 'pad', got {pad_mode!r}")
    p = _ints(who, "padding", padding, 1, 0)[0]
    if p and pad_mode != "pad":
        raise ValueError(f"{who}: padding must be 0 unless pad_mode is 'pad', got {padding!r}")
    y = _ops.conv2d(_ops.expand_dims(input, 2), _ops.expand_dims(weight, 2), None,
                    stride=(1, _ints(who, "stride", stride, 1)[0]), pad_mode=pad_mode, pad=(0, 0, p, p),
                    dilation=(1, _ints(who, "dilation", dilation, 1)[0]), groups=groups)
    y = _ops.squeeze(y, (2,))
    if bias is not None:
        y = y + _ops.reshape(bias, (1, -1, 1))
    return y


def bias_add(input_x, bias):
    """input_x + bias along the channel dim 1 (input rank 2 to 5, bias (C,))."""
    _check_rank("bias_add", "input_x", input_x.ndim, (2, 3, 4, 5))
    _check_rank("bias_add", "bias", bias.ndim, (1,))
    if bias.shape[0] != input_x.shape[1]:
        raise ValueError(f"bias_add: bias has {bias.shape[0]} values, input_x {input_x.shape[1]} channels (dim 1)")
    return input_x + _ops.reshape(bias, (bias.shape[0],) + (1,) * (input_x.ndim - 2))


def bidense(input1, input2, weight, bias=None):
    """The bilinear form y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] (+ bias[o])."""
    who = "bidense"
    _check_rank(who, "weight", weight.ndim, (3,))
    o, n1, n2 = weight.shape
    if input1.shape[-1] != n1 or input2.shape[-1] != n2 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise ValueError(f"{who}: input1 {tuple(input1.shape)} and input2 {tuple(input2.shape)} must share leading "
                         f"dims and end in {n1} and {n2} (weight {tuple(weight.shape)})")
    lead = tuple(input1.shape[:-1])
    x1 = _ops.reshape(input1, (-1, n1))
    x2 = _ops.reshape(input2, (-1, n2))
    t = _ops.matmul(x1, _ops.reshape(_ops.transpose(weight, (1, 0, 2)), (n1, o * n2)))  # (B, o * n2)
    y = _ops.sum(_ops.reshape(t, (-1, o, n2)) * _ops.expand_dims(x2, 1), (-1,))
    if bias is not None:
        y = y + bias
    return _ops.reshape(y, lead + (o,))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Each sample's channels in num_groups groups normalized over (group channels, spatial),
    then weight and bias per channel. Input (N, C, ...)."""
    who = "group_norm"
    _check_rank(who, "input", input.ndim, (2, 3, 4, 5, 6))
    n, c = input.shape[0], input.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1 or c % num_groups:
        raise ValueError(f"{who}: num_groups must be a positive int dividing the {c} channels, got {num_groups!r}")
    g = _ops.reshape(input, (n, num_groups, -1))
    mean = _ops.mean(g, (2,), True)
    var = _ops.mean((g - mean) * (g - mean), (2,), True)  # population variance
    y = _ops.reshape((g - mean) / _ops.sqrt(var + eps), input.shape)
    shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = y * _ops.reshape(weight, shape)
    if bias is not None:
        y = y + _ops.reshape(bias, shape)
    return y


@constexpr
def _check_slopes(lower, upper):
    if isinstance(lower, bool) or isinstance(upper, bool) or not isinstance(lower, (int, float)) or \
            not isinstance(upper, (int, float)) or lower > upper:
        raise ValueError(f"rrelu: lower and upper must be floats with lower <= upper, got {lower!r}, {upper!r}")
    return True


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3):  # noqa: A002
    """Randomized leaky ReLU: x where x >= 0, else a * x with a drawn from U(lower, upper) per element."""
    _check_slopes(lower, upper)
    if lower == upper:  # a fixed slope (uniform needs a non-empty range)
        return _ops.select(_ops.greater_equal(input, 0.0), input, input * float(lower))
    a = _ops.cast(_ops.uniform(input.shape, float(lower), float(upper)), input.dtype)
    return _ops.select(_ops.greater_equal(input, 0.0), input, input * a)


# ---- losses --------------------------------------------------------------------------------------


def multi_margin_loss(input, target, p=1, margin=1, weight=None, reduction="mean"):  # noqa: A002
    """Per sample, sum over classes i != y of weight[y] * max(0, margin - x[y] + x[i])^p / C."""
    who = "multi_margin_loss"
    if p not in (1, 2):
        raise ValueError(f"{who}: p must be 1 or 2, got {p!r}")
    _check_rank(who, "input", input.ndim, (1, 2))
    classes = input.shape[-1]
    onehot = _ops.one_hot(_ops.cast(target, int64), classes, 1.0, 0.0, -1, input.dtype)
    x_y = _ops.sum(input * onehot, (-1,), True)
    hinge = _ops.relu(float(margin) - x_y + input) * (1.0 - onehot)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * _ops.sum(onehot * weight, (-1,), True)
    return _reduce(who, _ops.sum(hinge, (-1,)) / float(classes), reduction)


def multilabel_margin_loss(input, target, reduction="mean"):  # noqa: A002
    """Multi-label hinge loss: target holds class indices up to the first -1; per sample the sum
    over targets j and non-targets i of max(0, 1 - (x[j] - x[i])) / C."""
    who = "multilabel_margin_loss"
    _check_rank(who, "input", input.ndim, (1, 2))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{who}: target must have input's shape {tuple(input.shape)}, got {tuple(target.shape)}")
    c = input.shape[-1]
    target = _ops.cast(target, int32)
    valid = _ops.cumprod(_ops.cast(_ops.not_equal(target, -1), int32), -1)
    safe = _ops.select(_ops.cast(valid, bool_), target, _ops.zeros_like(target))
    hits = _ops.one_hot(safe, c, 1.0, 0.0, -1, input.dtype) * _ops.expand_dims(_ops.cast(valid, input.dtype), -1)
    is_target = _ops.minimum(_ops.sum(hits, (-2,)), 1.0)
    x_t = _ops.sum(hits * _ops.expand_dims(input, -2), (-1,))
    margins = _ops.relu(1.0 - (_ops.expand_dims(x_t, -1) - _ops.expand_dims(input, -2)))
    pair = _ops.expand_dims(_ops.cast(valid, input.dtype), -1) * _ops.expand_dims(1.0 - is_target, -2)
    return _reduce(who, _ops.sum(margins * pair, (-2, -1)) / float(c), reduction)


# ---- CTC greedy decoding -------------------------------------------------------------------------
def _ctc_greedy_decode(inputs, sequence_length, merge_repeated=True):
    """ctc_greedy_decoder's computation (what graph mode parses)."""
    who = "ctc_greedy_decoder"
    _check_rank(who, "inputs", inputs.ndim, (3,))
    _check_rank(who, "sequence_length", sequence_length.ndim, (1,))
    t, b, c = inputs.shape
    if t < 1 or c < 1:
        raise ValueError(f"{who}: inputs must have max_time and classes >= 1, got shape {tuple(inputs.shape)}")
    if sequence_length.shape[0] != b:
        raise ValueError(f"{who}: sequence_length must have {b} values (the batch), got {sequence_length.shape[0]}")
    steps = _ops.reshape(_ops.cast(_arange_f32(t), int64), (t, 1))
    live = _ops.less(steps, _ops.reshape(_ops.cast(sequence_length, int64), (1, b)))       # (T, B)
    best = _ops.argmax(inputs, -1)                                                          # (T, B)
    top = _ops.max(inputs, (-1,))
    keep = _ops.logical_and(live, _ops.not_equal(best, c - 1))
    if merge_repeated:
        prev = _ops.concat((_ops.fill(best.dtype, (1, b), -1), _ops.slice(best, (0, 0), (t - 1, b))), 0)
        keep = _ops.logical_and(keep, _ops.not_equal(best, prev))
    keep_bt = _ops.transpose(keep, (1, 0))                                                  # (B, T)
    counts = _ops.cumsum(_ops.cast(keep_bt, int64), 1)
    batch_ids = _ops.broadcast_to(_ops.reshape(_ops.cast(_arange_f32(b), int64), (b, 1)), (b, t))
    indices = _ops.stack((_P.masked_select(batch_ids, keep_bt), _P.masked_select(counts - 1, keep_bt)), 1)
    values = _ops.cast(_P.masked_select(_ops.transpose(best, (1, 0)), keep_bt), int64)
    longest = _ops.max(_ops.slice(counts, (0, t - 1), (b, 1)), ())
    shape = _ops.stack((_ops.fill(int64, (), b), _ops.cast(longest, int64)), 0)
    log_prob = -_ops.sum(_ops.select(live, top, _ops.zeros_like(top)), (0,))
    return indices, values, shape, _ops.reshape(log_prob, (b, 1))


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True):
    """Best-path decoding of (max_time, batch, classes) logits (blank = the last class): per step
    the top class, repeats merged (merge_repeated), blanks dropped. Returns MindSpore's sparse
    form (decoded_indices (K, 2) [batch, position], decoded_values (K,), decoded_shape
    (batch, longest), all int64) and log_probability (batch, 1): minus the sum of each
    sequence's per-step maximum logits. Eagerly, sequence_length values outside [0, max_time]
    raise; compiled code, which cannot read them, treats them as clamped to that range."""
    if sequence_length.size and inputs.ndim == 3:
        arr = sequence_length.asnumpy()
        if arr.min() < 0 or arr.max() > inputs.shape[0]:
            raise ValueError(f"ctc_greedy_decoder: sequence_length values must lie in [0, {inputs.shape[0]}] "
                             f"(max_time), got {arr.tolist()}")
    return _ctc_greedy_decode(inputs, sequence_length, merge_repeated)


ctc_greedy_decoder._mycel_graph_function = _ctc_greedy_decode  # graph mode parses the decoder itself


__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "avg_pool1d", "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d", "fractional_max_pool3d", "conv1d", "bias_add", "bidense", "group_norm", "rrelu",
           "multi_margin_loss", "multilabel_margin_loss", "ctc_greedy_decoder"]
