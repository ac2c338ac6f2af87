"""Table rows for the 3-d windowed ops (conv3d, its backward ops, max/avg_pool3d and their
gradients) and ctc_loss. References are direct numpy loops in float64: strided views of the padded
input per kernel tap, scatters for the adjoints, and the CTC alpha recursion."""
import dataclasses

import numpy as np

from op_cases import OpCase, make_input

TOL = dict(rtol=1e-4, atol=1e-4)


def _f64(*arrays):
    return [None if a is None else np.asarray(a, dtype=np.float64) for a in arrays]


def _triple(v):
    v = (v,) if np.isscalar(v) else tuple(v)
    return v * 3 if len(v) == 1 else v[-3:]


def _pad6(p):
    p = (p,) if np.isscalar(p) else tuple(p)
    if len(p) == 1:
        return p * 6
    if len(p) == 3:
        return (p[0], p[0], p[1], p[1], p[2], p[2])
    return p


def geometry(in_sizes, kernel, stride, dilation, pad_mode, pad):
    """Per dim (out, pad_before, pad_after); MindSpore's 'same' puts the extra one at the end."""
    pads = _pad6(pad)
    out = []
    for i, n in enumerate(in_sizes):
        k, s, d = kernel[i], stride[i], dilation[i]
        ek = d * (k - 1) + 1
        if pad_mode == "same":
            o = -(-n // s)
            total = max((o - 1) * s + ek - n, 0)
            p0, p1 = total // 2, total - total // 2
        else:
            p0, p1 = (0, 0) if pad_mode == "valid" else (pads[2 * i], pads[2 * i + 1])
            o = (n + p0 + p1 - ek) // s + 1
        out.append((o, p0, p1))
    return out


def _views(xp, geo, kernel, stride, dilation):
    """(tap index, strided view of the padded input under that tap) for each kernel tap."""
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            for c in range(kernel[2]):
                sl = tuple(slice(t * dilation[i], t * dilation[i] + stride[i] * (geo[i][0] - 1) + 1, stride[i])
                           for i, t in enumerate((a, b, c)))
                yield (a, b, c), xp[(Ellipsis,) + sl]


def _padded(x, geo, value=0.0):
    widths = [(0, 0)] * (x.ndim - 3) + [(g[1], g[2]) for g in geo]
    return np.pad(x, widths, constant_values=value)


def conv3d_ref(x, w, b=None, stride=1, pad_mode="valid", pad=0, dilation=1, groups=1):
    xd, wd, bd = _f64(x, w, b)
    k, s, d = w.shape[2:], _triple(stride), _triple(dilation)
    geo = geometry(x.shape[2:], k, s, d, pad_mode, pad)
    xp = _padded(xd, geo)
    oc, icg = w.shape[:2]
    ocg = oc // groups
    y = np.zeros((x.shape[0], oc) + tuple(g[0] for g in geo))
    for tap, v in _views(xp, geo, k, s, d):
        for g in range(groups):
            y[:, g * ocg:(g + 1) * ocg] += np.einsum("ncdhw,oc->nodhw", v[:, g * icg:(g + 1) * icg],
                                                     wd[g * ocg:(g + 1) * ocg, :, tap[0], tap[1], tap[2]])
    if bd is not None:
        y += bd.reshape(1, -1, 1, 1, 1)
    return y.astype(x.dtype)


def conv3d_backprop_input_ref(dout, w, input_size, stride=1, pad_mode="valid", pad=0, dilation=1, groups=1):
    dy, wd = _f64(dout, w)
    n, c = dout.shape[0], input_size[1]
    k, s, d = w.shape[2:], _triple(stride), _triple(dilation)
    geo = geometry(input_size[2:], k, s, d, pad_mode, pad)
    dxp = _padded(np.zeros((n, c) + tuple(input_size[2:])), geo)
    oc, icg = w.shape[:2]
    ocg = oc // groups
    for tap, v in _views(dxp, geo, k, s, d):  # views write through to dxp
        for g in range(groups):
            v[:, g * icg:(g + 1) * icg] += np.einsum("nodhw,oc->ncdhw", dy[:, g * ocg:(g + 1) * ocg],
                                                     wd[g * ocg:(g + 1) * ocg, :, tap[0], tap[1], tap[2]])
    sl = tuple(slice(g[1], g[1] + size) for g, size in zip(geo, input_size[2:]))
    return dxp[(slice(None), slice(None)) + sl].astype(dout.dtype)


def conv3d_backprop_filter_ref(dout, x, filter_size, stride=1, pad_mode="valid", pad=0, dilation=1, groups=1):
    dy, xd = _f64(dout, x)
    k, s, d = filter_size[2:], _triple(stride), _triple(dilation)
    geo = geometry(x.shape[2:], k, s, d, pad_mode, pad)
    xp = _padded(xd, geo)
    oc, icg = filter_size[:2]
    ocg = oc // groups
    dw = np.zeros(filter_size)
    for tap, v in _views(xp, geo, k, s, d):
        for g in range(groups):
            dw[g * ocg:(g + 1) * ocg, :, tap[0], tap[1], tap[2]] = np.einsum(
                "nodhw,ncdhw->oc", dy[:, g * ocg:(g + 1) * ocg], v[:, g * icg:(g + 1) * icg])
    return dw.astype(dout.dtype)


def _pool_geo(x, kernel_size, strides, pad_mode, pad):
    k, s = _triple(kernel_size), _triple(strides)
    return k, s, geometry(x.shape[-3:], k, s, (1, 1, 1), pad_mode, pad)


def max_pool3d_ref(x, kernel_size=1, strides=1, pad_mode="valid", pad=0):
    k, s, geo = _pool_geo(x, kernel_size, strides, pad_mode, pad)
    xp = _padded(np.asarray(x, np.float64), geo, -np.inf)
    return np.max(np.stack([v for _, v in _views(xp, geo, k, s, (1, 1, 1))]), axis=0).astype(x.dtype)


def _avg_divisor(x, k, s, geo, include_pad):
    ones = _padded(np.ones(x.shape[-3:]), geo, 1.0 if include_pad else 0.0)
    return sum(v for _, v in _views(ones, geo, k, s, (1, 1, 1)))


def avg_pool3d_ref(x, kernel_size=1, strides=1, pad_mode="valid", pad=0, count_include_pad=True):
    k, s, geo = _pool_geo(x, kernel_size, strides, pad_mode, pad)
    xp = _padded(np.asarray(x, np.float64), geo)
    total = sum(v for _, v in _views(xp, geo, k, s, (1, 1, 1)))
    return (total / _avg_divisor(x, k, s, geo, count_include_pad)).astype(x.dtype)


def max_pool3d_grad_ref(x, dout, kernel_size=1, strides=1, pad_mode="valid", pad=0):
    k, s, geo = _pool_geo(x, kernel_size, strides, pad_mode, pad)
    xp = _padded(np.asarray(x, np.float64), geo, -np.inf)
    views = [v for _, v in _views(xp, geo, k, s, (1, 1, 1))]
    first = np.argmax(np.stack(views), axis=0)  # the first maximum in the kernel's row-major order
    dxp = np.zeros_like(xp)
    dxv = [v for _, v in _views(dxp, geo, k, s, (1, 1, 1))]
    for t, v in enumerate(dxv):
        v += np.where(first == t, np.asarray(dout, np.float64), 0.0)
    sl = tuple(slice(g[1], g[1] + n) for g, n in zip(geo, x.shape[-3:]))
    return dxp[(Ellipsis,) + sl].astype(x.dtype)


def avg_pool3d_grad_ref(x, dout, kernel_size=1, strides=1, pad_mode="valid", pad=0, count_include_pad=True):
    k, s, geo = _pool_geo(x, kernel_size, strides, pad_mode, pad)
    share = np.asarray(dout, np.float64) / _avg_divisor(x, k, s, geo, count_include_pad)
    dxp = _padded(np.zeros(x.shape), geo)
    for _, v in _views(dxp, geo, k, s, (1, 1, 1)):
        v += share
    sl = tuple(slice(g[1], g[1] + n) for g, n in zip(geo, x.shape[-3:]))
    return dxp[(Ellipsis,) + sl].astype(x.dtype)


def _gen(*shapes):
    def gen(rng, dtype):
        return [make_input(rng, s, dtype) for s in shapes]
    return gen


def _distinct(shape, dout_shape=None):
    """Inputs without ties (max pooling's gradient is then well defined), and a dout."""
    def gen(rng, dtype):
        x = (rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0).astype(dtype)
        return [x] if dout_shape is None else [x, make_input(rng, dout_shape, dtype)]
    return gen


# ---- ctc_loss ----

def _lse(a, b):
    m = np.maximum(a, b)
    return np.where(m == -np.inf, -np.inf, m + np.log(np.exp(a - np.where(m == -np.inf, 0, m)) +
                                                         np.exp(b - np.where(m == -np.inf, 0, m))))


def ctc_alpha(lp, target, blank):
    """log alpha (T, 2L+1) of one item by the textbook recursion, and its nll."""
    ext = [blank]
    for c in target:
        ext += [int(c), blank]
    t_len, n_ext = lp.shape[0], len(ext)
    a = np.full((t_len, n_ext), -np.inf)
    if t_len == 0:
        return a, (0.0 if len(target) == 0 else np.inf)
    a[0, 0] = lp[0, blank]
    if n_ext > 1:
        a[0, 1] = lp[0, ext[1]]
    for t in range(1, t_len):
        for s in range(n_ext):
            v = a[t - 1, s]
            if s >= 1:
                v = _lse(v, a[t - 1, s - 1])
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                v = _lse(v, a[t - 1, s - 2])
            a[t, s] = v + lp[t, ext[s]] if v != -np.inf else -np.inf
    end = a[-1, -1] if n_ext == 1 else _lse(a[-1, -1], a[-1, -2])
    return a, float(-end)


def ctc_loss_ref(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    lp = np.asarray(log_probs, np.float64)
    t_max, n = lp.shape[:2]
    s_max = targets.shape[1]
    alpha = np.full((n, t_max, 2 * s_max + 1), -np.inf)
    nll = np.zeros(n)
    for i in range(n):
        a, v = ctc_alpha(lp[:input_lengths[i], i], targets[i, :target_lengths[i]], blank)
        alpha[i, :a.shape[0], :a.shape[1]] = a
        nll[i] = 0.0 if zero_infinity and np.isinf(v) else v
    if reduction == "mean":
        loss = np.mean(nll / np.maximum(np.asarray(target_lengths), 1))
    elif reduction == "sum":
        loss = np.sum(nll)
    else:
        loss = nll
    return np.asarray(loss).astype(log_probs.dtype), alpha.astype(log_probs.dtype)


def ctc_inputs(t, n, c, s, blank=0, int_dtype=np.int64, short=False):
    """(log_probs, targets, input_lengths, target_lengths) of a random batch; short=True makes
    the last item's input too short to align (an infinite loss)."""
    def gen(rng, dtype):
        logits = rng.standard_normal((t, n, c))
        lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        classes = [k for k in range(c) if k != blank]
        targets = rng.choice(classes, size=(n, s)).astype(int_dtype)
        tl = rng.integers(0, s + 1, size=n).astype(int_dtype)
        il = rng.integers(max(1, t // 2), t + 1, size=n).astype(int_dtype)
        il = np.maximum(il, 2 * tl + 1).clip(max=t).astype(int_dtype)
        if short:
            tl[-1], il[-1] = s, 1
        return [lp.astype(dtype), targets, il, tl]
    return gen


def ctc_loss_grad_ref(dout, log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
                      zero_infinity=False):
    """d loss / d log_probs by central differences of ctc_loss_ref (float64)."""
    lp = np.asarray(log_probs, np.float64)
    g = np.zeros_like(lp)
    eps = 1e-6
    weight = np.asarray(dout, np.float64)
    for idx in np.ndindex(lp.shape):
        hi, lo = lp.copy(), lp.copy()
        hi[idx] += eps
        lo[idx] -= eps
        f = [np.sum(weight * ctc_loss_ref(v, targets, input_lengths, target_lengths, blank, reduction,
                                          zero_infinity)[0]) for v in (hi, lo)]
        g[idx] = (f[0] - f[1]) / (2 * eps)
    return g.astype(log_probs.dtype)


def _ctc_grad_gen(t, n, c, s, reduction, blank=0):
    def gen(rng, dtype):
        lp, tg, il, tl = ctc_inputs(t, n, c, s, blank)(rng, dtype)
        dout = rng.uniform(0.5, 1.5, size=(n,) if reduction == "none" else ()).astype(dtype)
        return [dout, lp, tg, il, tl]
    return gen


F = ("float32", "float64")
CASES = [
    OpCase("conv3d", conv3d_ref, _gen((2, 3, 5, 6, 4), (4, 3, 3, 2, 3)), dtypes=F, **TOL),
    OpCase("conv3d", conv3d_ref, _gen((1, 2, 5, 5, 6), (4, 2, 3, 3, 3), (4,)),
           attrs=dict(stride=2, pad_mode="same"), id="same_stride2_bias", dtypes=F, **TOL),
    OpCase("conv3d", conv3d_ref, _gen((2, 4, 6, 5, 5), (6, 2, 2, 3, 3), (6,)),
           attrs=dict(pad_mode="pad", pad=(1, 0, 2, 1, 0, 1), dilation=(1, 2, 1), groups=2), id="pad6_groups",
           dtypes=F, **TOL),
    OpCase("conv3d", conv3d_ref, _gen((1, 3, 4, 4, 4), (3, 1, 2, 2, 2)), attrs=dict(groups=3, stride=(1, 2, 1)),
           id="depthwise", dtypes=F, **TOL),
    OpCase("conv3d", conv3d_ref, _gen((0, 2, 4, 4, 4), (3, 2, 2, 2, 2)), id="empty", dtypes=F, **TOL),
    OpCase("conv3d_backprop_input", conv3d_backprop_input_ref, _gen((2, 4, 3, 4, 2), (4, 3, 3, 2, 3)),
           attrs=dict(input_size=(2, 3, 5, 5, 4)), dtypes=F, **TOL),
    OpCase("conv3d_backprop_input", conv3d_backprop_input_ref, _gen((1, 4, 3, 3, 3), (4, 1, 3, 3, 3)),
           attrs=dict(input_size=(1, 2, 6, 5, 6), stride=2, pad_mode="same", groups=2), id="same_groups",
           dtypes=F, **TOL),
    OpCase("conv3d_backprop_filter", conv3d_backprop_filter_ref, _gen((2, 4, 3, 4, 2), (2, 3, 5, 5, 4)),
           attrs=dict(filter_size=(4, 3, 3, 2, 3)), dtypes=F, **TOL),
    OpCase("conv3d_backprop_filter", conv3d_backprop_filter_ref, _gen((1, 3, 3, 3, 3), (1, 2, 6, 5, 5)),
           attrs=dict(filter_size=(3, 2, 2, 2, 2), stride=2, pad_mode="pad", pad=1, dilation=(2, 1, 1)),
           id="dilated_pad", dtypes=F, **TOL),
    OpCase("max_pool3d", max_pool3d_ref, _distinct((2, 3, 5, 6, 4)), attrs=dict(kernel_size=2, strides=2), dtypes=F),
    OpCase("max_pool3d", max_pool3d_ref, _distinct((3, 5, 5, 5)), attrs=dict(kernel_size=3, strides=2, pad_mode="same"),
           id="cdhw_same", dtypes=F),
    OpCase("max_pool3d", max_pool3d_ref, _distinct((1, 2, 5, 4, 6)),
           attrs=dict(kernel_size=(3, 2, 3), strides=(2, 1, 2), pad_mode="pad", pad=(1, 1, 0, 1, 1, 0)),
           id="pad", dtypes=F),
    OpCase("avg_pool3d", avg_pool3d_ref, _gen((2, 3, 5, 6, 4)), attrs=dict(kernel_size=2, strides=2), dtypes=F),
    OpCase("avg_pool3d", avg_pool3d_ref, _gen((1, 2, 5, 5, 5)),
           attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1), id="pad_include", dtypes=F),
    OpCase("avg_pool3d", avg_pool3d_ref, _gen((1, 2, 5, 5, 5)),
           attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1, count_include_pad=False), id="pad_exclude",
           dtypes=F),
    OpCase("avg_pool3d", avg_pool3d_ref, _gen((2, 4, 6, 5)),
           attrs=dict(kernel_size=(2, 3, 2), strides=2, pad_mode="same", count_include_pad=False), id="cdhw_same",
           dtypes=F),
    OpCase("max_pool3d_grad", max_pool3d_grad_ref, _distinct((2, 2, 5, 6, 4), (2, 2, 2, 3, 2)),
           attrs=dict(kernel_size=2, strides=2), dtypes=F),
    OpCase("max_pool3d_grad", max_pool3d_grad_ref, _distinct((1, 2, 5, 5, 5), (1, 2, 3, 3, 3)),
           attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1), id="overlap_pad", dtypes=F),
    OpCase("avg_pool3d_grad", avg_pool3d_grad_ref, _gen((2, 2, 5, 6, 4), (2, 2, 2, 3, 2)),
           attrs=dict(kernel_size=2, strides=2), dtypes=F),
    OpCase("avg_pool3d_grad", avg_pool3d_grad_ref, _gen((1, 2, 5, 5, 5), (1, 2, 3, 3, 3)),
           attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1, count_include_pad=False), id="overlap_pad",
           dtypes=F),
    OpCase("ctc_loss", ctc_loss_ref, ctc_inputs(8, 3, 5, 3), dtypes=F, **TOL),
    OpCase("ctc_loss", ctc_loss_ref, ctc_inputs(7, 4, 4, 3, blank=2, int_dtype=np.int32),
           attrs=dict(blank=2, reduction="none"), id="blank2_none_int32", dtypes=F, **TOL),
    OpCase("ctc_loss", ctc_loss_ref, ctc_inputs(6, 3, 4, 3, short=True),
           attrs=dict(reduction="sum", zero_infinity=True), id="zero_infinity", dtypes=F, **TOL),
    OpCase("ctc_loss_grad", ctc_loss_grad_ref, _ctc_grad_gen(5, 2, 4, 2, "mean"), dtypes=F, rtol=1e-5, atol=1e-6),
    OpCase("ctc_loss_grad", ctc_loss_grad_ref, _ctc_grad_gen(5, 3, 3, 2, "none"), attrs=dict(reduction="none"),
           id="none", dtypes=F, rtol=1e-5, atol=1e-6),
]

# float16 (computed in float32, rounded once): the first row of each 3-d op again, to float16's
# precision.
_FIRST = {}
for _c in CASES:
    _FIRST.setdefault(_c.op, _c)
CASES += [dataclasses.replace(_FIRST[op], dtypes=("float16",), rtol=2e-2, atol=2e-2,
                              id=(_FIRST[op].id + "_f16").lstrip("_"))
          for op in ("conv3d", "conv3d_backprop_input", "conv3d_backprop_filter", "max_pool3d", "max_pool3d_grad",
                     "avg_pool3d", "avg_pool3d_grad")]

# Small rows: the ops' help-text examples (scripts/gen_op_examples.py takes rows of at most 48 items).
CASES += [
    OpCase("conv3d", conv3d_ref, _gen((1, 1, 2, 3, 2), (1, 1, 2, 2, 2)), id="small", dtypes=F, **TOL),
    OpCase("max_pool3d", max_pool3d_ref, _distinct((1, 1, 2, 4, 2)), attrs=dict(kernel_size=2, strides=2),
           id="small", dtypes=F),
    OpCase("avg_pool3d", avg_pool3d_ref, _gen((1, 1, 2, 4, 2)), attrs=dict(kernel_size=2, strides=2), id="small",
           dtypes=F),
]
