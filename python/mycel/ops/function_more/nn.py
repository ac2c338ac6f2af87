"""Activations and losses of MindSpore 2.x's functional ops (the nn Cells call them)."""
import math

import numpy as np

import mycel.ops as _P  # the Python-level ops (masked_fill, assign, ...); this package loads last
from mycel import _mycel
from mycel.common.dtype import (float16, bfloat16, float32, float64, int32, int64, bool_, complex64,
                                complex128)
from mycel.common.parameter import Parameter as _Parameter
from mycel.common.tensor import Tensor
from mycel.ops import tensor_composites as _tc
from mycel.ops.primitive import constexpr
from mycel.ops.function_more._base import _axis, _float_like, _FLOATS, _COMPLEX

_ops = _mycel.ops

# ---- activations ---------------------------------------------------------------------------------
def celu(x, alpha=1.0):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return _ops.relu(x) + _ops.minimum(_ops.expm1(x / alpha) * alpha, _ops.zeros_like(x))


def selu(input_x):
    """scale * elu(x, alpha) with the self-normalizing constants. An integer x (MindSpore's SeLU
    takes int8 and int32) is computed in float32 and truncated back to its dtype."""
    if input_x.dtype in _FLOATS:
        return _ops.elu(input_x, alpha=1.6732632423543772) * 1.0507009873554805
    y = _ops.elu(_ops.cast(input_x, float32), alpha=1.6732632423543772) * 1.0507009873554805
    return _ops.cast(y, input_x.dtype)


def hardsigmoid(input):
    """relu6(x + 3) / 6."""
    return _ops.relu6(input + 3.0) / 6.0


def hardswish(x):
    """x * relu6(x + 3) / 6."""
    return x * _ops.relu6(x + 3.0) / 6.0


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """input clamped to [min_val, max_val]."""
    return _ops.clip_by_value(input, min_val, max_val)


def mish(x):
    """x * tanh(softplus(x))."""
    return x * _ops.tanh(_ops.softplus(x))


def logsigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    return -_ops.softplus(-x)


def tanhshrink(input):
    """input - tanh(input)."""
    return input - _ops.tanh(input)


def softshrink(x, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""
    return _ops.relu(x - lambd) - _ops.relu(-x - lambd)


def hardshrink(x, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _ops.select(_ops.greater(_ops.abs(x), lambd), x, _ops.zeros_like(x))


def threshold(input, thr, value):
    """input where input > thr, else value."""
    return _ops.select(_ops.greater(input, thr), input, _P.full_like(input, value))


def fast_gelu(x):
    """x * sigmoid(1.702 x) (MindSpore's FastGeLU)."""
    return x * _ops.sigmoid(x * 1.702)


def prelu(x, weight):
    """x where x > 0, else weight * x; weight per channel (axis 1) or one value. The result has
    x's shape, and at x = 0 the gradient is weight's (MindSpore's PReLU)."""
    w = weight
    if weight.ndim == 1 and weight.shape[0] > 1 and x.ndim >= 2:
        w = weight.reshape((1, weight.shape[0]) + (1,) * (x.ndim - 2))
    elif x.ndim == 0 and weight.ndim == 1 and weight.shape[0] == 1:
        w = weight.reshape(())
    return _ops.select(x > 0, x, w * x)


def _channel_window_sum(sq, before, after):
    """The sum over channels c - before .. c + after of sq (N, C, ...), zeros beyond the edges."""
    c = sq.shape[1]
    padded = _ops.pad(sq, (0, 0, before, after) + (0, 0) * (sq.ndim - 2))
    total = _tc.narrow(padded, 1, 0, c)
    for k in range(1, before + after + 1):
        total = total + _tc.narrow(padded, 1, k, c)
    return total


def lrn(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, norm_region="ACROSS_CHANNELS"):
    """Local response normalization (TensorFlow's and MindSpore's form):
    x / (bias + alpha * sum of x^2 over channels c - r .. c + r) ** beta."""
    if norm_region != "ACROSS_CHANNELS":
        raise ValueError(f"lrn: norm_region must be 'ACROSS_CHANNELS', got {norm_region!r}")
    s = _channel_window_sum(x * x, depth_radius, depth_radius)
    return x / _ops.pow(bias + alpha * s, beta)


def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    """PyTorch's form: x / (k + alpha / size * sum of x^2 over `size` channels) ** beta."""
    s = _channel_window_sum(x * x, size // 2, (size - 1) // 2)
    return x / _ops.pow(k + alpha / size * s, beta)


# ---- losses ----------------------------------------------------------------------------------------
def _reduce(who, loss, reduction):
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{who}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced."""
    return _reduce("l1_loss", _ops.abs(input - target), reduction)


def smooth_l1_loss(input, target, beta=1.0, reduction="none"):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); MindSpore
    reduces with 'none' by default."""
    if beta <= 0:
        raise ValueError(f"smooth_l1_loss: beta must be > 0, got {beta!r}")
    d = _ops.abs(input - target)
    loss = _ops.select(_ops.less(d, beta), 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce("smooth_l1_loss", loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta!r}")
    d = _ops.abs(input - target)
    loss = _ops.select(_ops.less(d, delta), 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce("huber_loss", loss, reduction)


def soft_margin_loss(input, target, reduction="mean"):
    """log(1 + exp(-target * input)), reduced."""
    return _reduce("soft_margin_loss", _ops.softplus(-target * input), reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), reduced."""
    return _reduce("margin_ranking_loss", _ops.relu(-target * (input1 - input2) + margin), reduction)


def hinge_embedding_loss(inputs, targets, margin=1.0, reduction="mean"):
    """inputs where targets == 1, max(0, margin - inputs) where targets == -1; reduced."""
    loss = _ops.select(_ops.equal(targets, 1), inputs * _ops.ones_like(targets),
                       _ops.relu(margin - inputs) * _ops.ones_like(targets))
    return _reduce("hinge_embedding_loss", loss, reduction)


def kl_div(logits, labels, reduction="mean", log_target=False):
    """labels * (log(labels) - logits), logits being log-probabilities (0 where labels is 0);
    'batchmean' divides the sum by the batch size."""
    if log_target:
        loss = _ops.exp(labels) * (labels - logits)
    else:
        safe = _ops.select(_ops.greater(labels, 0), labels, _ops.ones_like(labels))
        loss = _ops.select(_ops.greater(labels, 0), labels * (_ops.log(safe) - logits), _ops.zeros_like(labels))
    if reduction == "batchmean":
        return _ops.sum(loss) / logits.shape[0]
    return _reduce("kl_div", loss, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """<x1, x2> / max(|x1| |x2|, eps) along dim."""
    d = dim
    dot = _ops.sum(x1 * x2, (d,))
    n1 = _ops.sqrt(_ops.sum(x1 * x1, (d,)))
    n2 = _ops.sqrt(_ops.sum(x2 * x2, (d,)))
    return dot / _ops.maximum(n1 * n2, eps)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """1 - cos(input1, input2) where target == 1, max(0, cos - margin) where target == -1."""
    c = cosine_similarity(input1, input2, 1, 1e-12) if input1.ndim > 1 else cosine_similarity(input1, input2, 0, 1e-12)
    loss = _ops.select(_ops.equal(target, 1), 1.0 - c, _ops.relu(c - margin))
    return _reduce("cosine_embedding_loss", loss, reduction)


def dist(input, other, p=2):
    """The p-norm of input - other (all elements)."""
    d = _ops.abs(input - other).reshape((-1,))
    if p == 0:
        return _ops.sum(_ops.cast(_ops.not_equal(d, 0), d.dtype))
    if p == float("inf"):
        return _ops.max(d)
    return _ops.pow(_ops.sum(_ops.pow(d, float(p))), 1.0 / p)


def cdist(x1, x2, p=2.0):
    """The p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R)."""
    diff = _ops.abs(_ops.expand_dims(x1, -2) - _ops.expand_dims(x2, -3))
    if p == float("inf"):
        return _ops.max(diff, (-1,))
    return _ops.pow(_ops.sum(_ops.pow(diff, float(p)), (-1,)), 1.0 / p)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the p-norm distance along the last axis."""
    def d(a, b):
        return _ops.pow(_ops.sum(_ops.pow(_ops.abs(a - b) + eps, float(p)), (-1,)), 1.0 / p)
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        dn = _ops.minimum(dn, d(positive, negative))
    return _reduce("triplet_margin_loss", _ops.relu(dp - dn + margin), reduction)


def gaussian_nll_loss(x, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (x - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with full)."""
    v = _ops.maximum(var, eps)
    loss = 0.5 * (_ops.log(v) + (x - target) * (x - target) / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce("gaussian_nll_loss", loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):
    """-mean over classes of y log(sigmoid(x)) + (1 - y) log(sigmoid(-x)), per sample, reduced."""
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce("multilabel_soft_margin_loss", _ops.mean(loss, (-1,)), reduction)


@constexpr
def _patch_plan(h, w, kernel_size, dilation, padding, stride):
    """(kh, kw, dh, dw, ph, pw, sh, sw, out_h, out_w) of a sliding window over an h x w plane."""
    def pair(v, name):
        v = (v, v) if isinstance(v, int) else tuple(v)
        if len(v) != 2 or any(not isinstance(k, int) for k in v):
            raise ValueError(f"unfold/fold: {name} must be an int or a pair of ints, got {v!r}")
        return v
    (kh, kw), (dh, dw) = pair(kernel_size, "kernel_size"), pair(dilation, "dilation")
    (ph, pw), (sh, sw) = pair(padding, "padding"), pair(stride, "stride")
    if min(kh, kw, dh, dw, sh, sw) < 1 or min(ph, pw) < 0:
        raise ValueError("unfold/fold: kernel_size, dilation and stride must be >= 1, padding >= 0")
    out_h = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    out_w = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if out_h < 1 or out_w < 1:
        raise ValueError(f"unfold/fold: a {kh}x{kw} window does not fit a {h}x{w} plane padded by {ph}, {pw}")
    return kh, kw, dh, dw, ph, pw, sh, sw, out_h, out_w


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of (N, C, H, W) as columns: (N, C * kh * kw, L) (PyTorch's im2col)."""
    n, c, h, w = input.shape
    kh, kw, dh, dw, ph, pw, sh, sw, oh, ow = _patch_plan(h, w, kernel_size, dilation, padding, stride)
    x = _ops.pad(input, (0, 0, 0, 0, ph, ph, pw, pw)) if ph or pw else input
    patches = []
    for i in range(kh):
        for j in range(kw):
            top, left = i * dh, j * dw
            patches.append(_ops.strided_slice(x, (0, 0, top, left),
                                              (n, c, top + sh * (oh - 1) + 1, left + sw * (ow - 1) + 1),
                                              (1, 1, sh, sw)))
    cols = _ops.stack(patches, 2)  # (N, C, kh * kw, oh, ow)
    return cols.reshape((n, c * kh * kw, oh * ow))


@constexpr
def _fold_positions(h, w, kh, kw, dh, dw, ph, pw, sh, sw, oh, ow):
    """For each (kernel offset, block) column entry, its flat position in the padded output."""
    hp, wp = h + 2 * ph, w + 2 * pw
    i, j, r, q = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(oh), np.arange(ow), indexing="ij")
    rows = r * sh + i * dh
    cols = q * sw + j * dw
    return Tensor((rows * wp + cols).reshape(-1, 1).astype(np.int64)), hp, wp


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns (N, C * kh * kw, L) summed back into (N, C, H, W) (PyTorch's col2im, unfold's adjoint)."""
    h, w = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    kh, kw, dh, dw, ph, pw, sh, sw, oh, ow = _patch_plan(h, w, kernel_size, dilation, padding, stride)
    n, ckk, length = input.shape
    c = ckk // (kh * kw)
    if c * kh * kw != ckk or length != oh * ow:
        raise ValueError(f"fold: input of shape {tuple(input.shape)} does not hold {kh}x{kw} blocks at "
                         f"{oh}x{ow} positions of a {h}x{w} output")
    positions, hp, wp = _fold_positions(h, w, kh, kw, dh, dw, ph, pw, sh, sw, oh, ow)
    cols = input.reshape((n, c, kh * kw * oh * ow))
    flat = _ops.transpose(cols, (2, 0, 1))  # (entries, N, C): scatter along the first axis
    out = _ops.tensor_scatter_add(_ops.zeros((hp * wp, n, c), input.dtype), positions, flat)
    out = _ops.transpose(out, (1, 2, 0)).reshape((n, c, hp, wp))
    return _ops.slice(out, (0, 0, ph, pw), (n, c, h, w))

