"""MindSpore's functional losses over any layout: ops.cross_entropy and nll (the loss alone)
for unbatched (C,), batched (N, C) and spatial (N, C, d1, ...) inputs. Plain Python over the
registry's nll_loss and log_softmax: the class dim moves last and the rest flattens into rows,
and reduction 'none' gives back the (N, d1, ...) shape."""
from mycel import _mycel
from mycel.common.dtype import bfloat16, float16, float32, float64
from mycel.common.validator import channels_last_perm

_ops = _mycel.ops
_REDUCTIONS = ("none", "mean", "sum")
_FLOATS = (float16, bfloat16, float32, float64)


def _check(who, logp, target, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{who}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if logp.ndim < 1:
        raise ValueError(f"{who}: input must have a class dimension, got shape {logp.shape}")


def _rows(x, n_classes):
    """(N, C, d...) -> (N * d..., C); (N, C) stays; (C,) -> (1, C)."""
    if x.ndim == 1:
        return _ops.reshape(x, (1, n_classes))
    if x.ndim == 2:
        return x
    return _ops.reshape(_ops.transpose(x, channels_last_perm(x.ndim)), (-1, n_classes))


def _unrows(per, like):
    """Per-row losses back to the layout of the input `like` without its class dim."""
    if like.ndim == 1:
        return _ops.reshape(per, ())
    return _ops.reshape(per, (like.shape[0],) + like.shape[2:])


def nll(input, target, weight=None, ignore_index=-100, reduction="mean"):  # noqa: A002
    """-weight[t] * input[..., t, ...] for log-probabilities with the class dim 1 (0 when
    unbatched); 'mean' divides by the summed weights of the counted targets."""
    _check("nll_loss", input, target, reduction)
    n_classes = input.shape[0] if input.ndim == 1 else input.shape[1]
    rows = _rows(input, n_classes)
    labels = _ops.reshape(target, (-1,))
    loss, _ = _ops.nll_loss(rows, labels, weight, reduction=reduction, ignore_index=ignore_index)
    if reduction == "none":
        return _unrows(loss, input)
    return loss


_FLOAT_WIDTH = {float16: 0, bfloat16: 0, float32: 1, float64: 2}


def _wider_float(a, b):
    """The wider of two float dtypes (float16 with bfloat16: float32, as elementwise ops do)."""
    if a not in _FLOAT_WIDTH or b not in _FLOAT_WIDTH:
        raise TypeError(f"cross_entropy: input and weight must be float tensors, got {a} and {b}")
    if _FLOAT_WIDTH[a] == _FLOAT_WIDTH[b] and a != b:
        return float32
    return a if _FLOAT_WIDTH[a] >= _FLOAT_WIDTH[b] else b


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",  # noqa: A002
                  label_smoothing=0.0):
    """log_softmax over the class dim, then NLL against class indices, or the cross entropy
    against class probabilities (target shaped like input); label_smoothing mixes in the
    uniform distribution."""
    _check("cross_entropy", input, target, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    class_axis = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_axis]
    if weight is not None and weight.dtype != input.dtype:
        # MindSpore multiplies the log-probabilities by the weight: the wider float type wins
        wide = _wider_float(input.dtype, weight.dtype)
        input, weight = _ops.cast(input, wide), _ops.cast(weight, wide)
    logp = _rows(_ops.log_softmax(input, axis=class_axis), n_classes)
    if target.ndim == input.ndim and target.dtype in _FLOATS:
        probs = _rows(target, n_classes)
        if label_smoothing != 0.0:
            probs = probs * (1.0 - label_smoothing) + label_smoothing / n_classes
        terms = -logp * probs if weight is None else -logp * probs * weight
        per = _ops.sum(terms, (1,))
        if reduction == "mean":
            return _ops.mean(per)
        if reduction == "sum":
            return _ops.sum(per)
        return _unrows(per, input)
    labels = _ops.reshape(target, (-1,))
    loss, total = _ops.nll_loss(logp, labels, weight, reduction=reduction, ignore_index=ignore_index)
    if label_smoothing != 0.0:
        # eps / C * sum_c -w_c logp_c over the counted targets, reduced like the NLL term
        keep = _ops.cast(_ops.not_equal(labels, ignore_index), logp.dtype)
        neg = -logp if weight is None else -logp * weight
        smooth = _ops.sum(neg, (1,)) * keep
        if reduction == "mean":
            smooth = _ops.sum(smooth) / total
        elif reduction == "sum":
            smooth = _ops.sum(smooth)
        loss = (1.0 - label_smoothing) * loss + label_smoothing / n_classes * smooth
    if reduction == "none":
        return _unrows(loss, input)
    return loss
