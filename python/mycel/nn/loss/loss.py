"""Loss functions (MindSpore's mindspore.nn losses), built from registry ops."""
from mycel import ops
from mycel.common.tensor import Tensor
from mycel.common.validator import check_rank
from mycel.ops.loss_functional import cross_entropy, nll
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
    """-weight[t] * logits[i, t] for log-probabilities (C,), (N, C) or (N, C, d...) and class
    targets; targets equal to ignore_index count for nothing; "mean" divides by the summed
    weights of the counted targets (ops.loss_functional.nll)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.weight = _tensor_or_none(weight, "NLLLoss", "weight")
        self.ignore_index = int(ignore_index)

    def construct(self, logits, labels):
        return nll(logits, labels, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(LossBase):
    """log_softmax over the class dim (1, or 0 unbatched) then NLL. Labels are class indices
    ((), (N,) or (N, d...)) or class probabilities shaped like the logits; label_smoothing mixes
    in the uniform distribution as in PyTorch and MindSpore (ops.cross_entropy)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if not 0 <= label_smoothing <= 1:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}")
        self.weight = _tensor_or_none(weight, "CrossEntropyLoss", "weight")
        self.ignore_index = int(ignore_index)
        self.label_smoothing = float(label_smoothing)

    def construct(self, logits, labels):
        check_rank("CrossEntropyLoss", "logits", logits.ndim, (1, 2, 3, 4, 5))
        return cross_entropy(logits, labels, self.weight, self.ignore_index, self.reduction,
                             self.label_smoothing)
