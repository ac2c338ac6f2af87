"""Loss functions (MindSpore's mindspore.nn losses), built from registry ops."""
from mycel import ops
from mycel.common.tensor import Tensor
from mycel.common.validator import channels_last_perm, check_rank
from mycel.nn.cell import Cell

_REDUCTIONS = ("none", "mean", "sum")


class LossBase(Cell):
    """A loss with a `reduction` of "mean", "sum" or "none"."""

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction
        # Graph mode folds bools, not string comparisons: decide the reduction here.
        self.reduce_mean, self.reduce_sum = reduction == "mean", reduction == "sum"

    def get_loss(self, x, weights=None):
        """x (times weights) reduced by self.reduction."""
        if weights is not None:
            x = x * weights
        if self.reduce_mean:
            return ops.mean(x)
        if self.reduce_sum:
            return ops.sum(x)
        return x


def _tensor_or_none(value, who, arg):
    if value is None or isinstance(value, Tensor):
        return value
    raise TypeError(f"{who}: '{arg}' must be a Tensor or None, got {type(value).__name__}")


class MSELoss(LossBase):
    """(logits - labels)**2, broadcast, reduced."""

    def construct(self, logits, labels):
        return ops.mse_loss(logits, labels, reduction=self.reduction)


class L1Loss(LossBase):
    """|logits - labels|, reduced."""

    def construct(self, logits, labels):
        return self.get_loss(ops.abs(logits - labels))


class SmoothL1Loss(LossBase):
    """0.5 * d**2 / beta where |d| < beta, else |d| - 0.5 * beta (d = logits - labels)."""

    def __init__(self, beta=1.0, reduction="none"):
        super().__init__(reduction)
        if beta <= 0:
            raise ValueError(f"SmoothL1Loss: beta must be > 0, got {beta}")
        self.beta = float(beta)

    def construct(self, logits, labels):
        d = ops.abs(logits - labels)
        loss = ops.select(ops.less(d, self.beta), 0.5 * d * d / self.beta, d - 0.5 * self.beta)
        return self.get_loss(loss)


class BCEWithLogitsLoss(LossBase):
    """Binary cross entropy of logits (sigmoid folded in), with optional per-element `weight`
    and per-class `pos_weight` (both broadcast against the logits)."""

    def __init__(self, reduction="mean", weight=None, pos_weight=None):
        super().__init__(reduction)
        self.weight = _tensor_or_none(weight, "BCEWithLogitsLoss", "weight")
        self.pos_weight = _tensor_or_none(pos_weight, "BCEWithLogitsLoss", "pos_weight")

    def construct(self, logits, labels):
        return ops.binary_cross_entropy_with_logits(logits, labels, self.weight, self.pos_weight,
                                                    reduction=self.reduction)


class SoftmaxCrossEntropyWithLogits(LossBase):
    """Cross entropy of logits (N, C) with one-hot/probability labels (N, C), or with class
    indices (N,) when sparse=True. MindSpore's default reduction here is "none"."""

    def __init__(self, sparse=False, reduction="none"):
        super().__init__(reduction)
        self.sparse = bool(sparse)

    def construct(self, logits, labels):
        check_rank("SoftmaxCrossEntropyWithLogits", "logits", logits.ndim, (2,))
        if self.sparse:
            return ops.sparse_softmax_cross_entropy_with_logits(logits, labels, reduction=self.reduction)
        loss, _ = ops.softmax_cross_entropy_with_logits(logits, labels)
        return self.get_loss(loss)


class NLLLoss(LossBase):
    """-weight[t] * logits[i, t] for log-probabilities (N, C) and targets (N,); targets equal to
    ignore_index count for nothing; "mean" divides by the summed weights of the counted targets."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.weight = _tensor_or_none(weight, "NLLLoss", "weight")
        self.ignore_index = int(ignore_index)

    def construct(self, logits, labels):
        loss, _ = ops.nll_loss(logits, labels, self.weight, reduction=self.reduction,
                               ignore_index=self.ignore_index)
        return loss


class CrossEntropyLoss(LossBase):
    """log_softmax over the class dim 1 then NLL. Labels are class indices (N, d...) or class
    probabilities shaped like the logits (N, C, d...); label_smoothing mixes in the uniform
    distribution as in PyTorch and MindSpore."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if not 0 <= label_smoothing <= 1:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}")
        self.weight = _tensor_or_none(weight, "CrossEntropyLoss", "weight")
        self.ignore_index = int(ignore_index)
        self.label_smoothing = float(label_smoothing)

    def construct(self, logits, labels):
        check_rank("CrossEntropyLoss", "logits", logits.ndim, (2, 3, 4, 5))
        n_classes = logits.shape[1]
        logp = ops.log_softmax(logits, axis=1)
        if logits.ndim > 2:  # (N, C, d...) -> (N * d..., C)
            logp = ops.reshape(ops.transpose(logp, channels_last_perm(logits.ndim)), (-1, n_classes))
            if labels.ndim == logits.ndim:
                labels = ops.reshape(ops.transpose(labels, channels_last_perm(logits.ndim)), (-1, n_classes))
            else:
                labels = ops.reshape(labels, (-1,))
        if labels.ndim == 2:
            return self._soft_targets(logp, labels, n_classes)
        loss, total = ops.nll_loss(logp, labels, self.weight, reduction=self.reduction,
                                   ignore_index=self.ignore_index)
        if self.label_smoothing == 0.0:
            return loss
        # Smoothing term: eps / C * sum_c -w_c logp_c, over the targets that are not ignored.
        eps = self.label_smoothing
        keep = ops.cast(ops.not_equal(labels, self.ignore_index), logp.dtype)
        neg = -logp if self.weight is None else -logp * self.weight
        smooth = ops.sum(neg, axis=1) * keep
        if self.reduce_mean:
            smooth = ops.sum(smooth) / total
        elif self.reduce_sum:
            smooth = ops.sum(smooth)
        return (1.0 - eps) * loss + eps / n_classes * smooth

    def _soft_targets(self, logp, labels, n_classes):
        if self.label_smoothing != 0.0:
            labels = labels * (1.0 - self.label_smoothing) + self.label_smoothing / n_classes
        terms = -logp * labels if self.weight is None else -logp * labels * self.weight
        return self.get_loss(ops.sum(terms, axis=1))
