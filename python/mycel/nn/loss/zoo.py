"""More of MindSpore's losses, each a composite of registry ops (gradients come from the ops):
MarginRankingLoss, HuberLoss, SoftMarginLoss, HingeEmbeddingLoss, CosineEmbeddingLoss,
KLDivLoss, BCELoss, PoissonNLLLoss, GaussianNLLLoss, MultiLabelSoftMarginLoss,
MultiMarginLoss, MultiLabelMarginLoss, TripletMarginLoss. Formulas and defaults follow MindSpore's documentation."""
import math

from mycel import ops
from mycel.nn.loss.loss import LossBase


def _positive(who, arg, value):
    if not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{who}: {arg} must be a positive number, got {value!r}")
    return float(value)


class MarginRankingLoss(LossBase):
    """max(0, -target * (input1 - input2) + margin)."""

    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = float(margin)

    def construct(self, input1, input2, target):
        return self.get_loss(ops.relu(-target * (input1 - input2) + self.margin))


class HuberLoss(LossBase):
    """0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta), d = logits - labels."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = _positive("HuberLoss", "delta", delta)

    def construct(self, logits, labels):
        d = ops.abs(logits - labels)
        quad = ops.minimum(d, self.delta)
        return self.get_loss(0.5 * quad * quad + self.delta * (d - quad))


class SoftMarginLoss(LossBase):
    """log(1 + exp(-y x)) (y in {-1, 1}), as softplus for stability."""

    def construct(self, logits, labels):
        return self.get_loss(ops.softplus(-labels * logits))


class HingeEmbeddingLoss(LossBase):
    """x where y == 1, max(0, margin - x) where y == -1."""

    def __init__(self, margin=1.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = float(margin)

    def construct(self, logits, labels):
        pos = ops.select(ops.equal(labels, 1.0), logits, ops.zeros_like(logits))
        neg = ops.select(ops.equal(labels, -1.0), ops.relu(self.margin - logits), ops.zeros_like(logits))
        return self.get_loss(pos + neg)


class CosineEmbeddingLoss(LossBase):
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1 (cosine over the
    last axis)."""

    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(reduction)
        if not -1.0 <= margin <= 1.0:
            raise ValueError(f"CosineEmbeddingLoss: margin must be in [-1, 1], got {margin}")
        self.margin = float(margin)

    def construct(self, logits_x1, logits_x2, labels):
        dot = ops.sum(logits_x1 * logits_x2, (-1,))
        norms = ops.sqrt(ops.sum(logits_x1 * logits_x1, (-1,)) * ops.sum(logits_x2 * logits_x2, (-1,)))
        cos = dot / ops.maximum(norms, 1e-12)
        loss = ops.select(ops.equal(labels, 1.0), 1.0 - cos, ops.relu(cos - self.margin))
        return self.get_loss(loss)


class KLDivLoss(LossBase):
    """target * (log(target) - logits) (logits are log-probabilities), 0 where target is 0;
    reduction 'batchmean' divides the sum by the batch size."""

    def __init__(self, reduction="mean"):
        self.batchmean = reduction == "batchmean"
        super().__init__("sum" if self.batchmean else reduction)

    def construct(self, logits, labels):
        safe = ops.select(ops.greater(labels, 0.0), labels, ops.ones_like(labels))
        loss = ops.select(ops.greater(labels, 0.0), labels * (ops.log(safe) - logits), ops.zeros_like(labels))
        if self.batchmean:
            return ops.sum(loss) / logits.shape[0]
        return self.get_loss(loss)


class BCELoss(LossBase):
    """-w (y log p + (1 - y) log(1 - p)) on probabilities p (the registry's binary_cross_entropy)."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = weight

    def construct(self, logits, labels):
        return ops.binary_cross_entropy(logits, labels, self.weight, reduction=self.reduction)


class PoissonNLLLoss(LossBase):
    """exp(x) - y x (log_input) or x - y log(x + eps), plus Stirling's term with full=True."""

    def __init__(self, log_input=True, full=False, eps=1e-08, reduction="mean"):
        super().__init__(reduction)
        self.log_input, self.full, self.eps = bool(log_input), bool(full), float(eps)

    def construct(self, input, target):  # noqa: A002 (MindSpore's argument name)
        if self.log_input:
            loss = ops.exp(input) - target * input
        else:
            loss = input - target * ops.log(input + self.eps)
        if self.full:
            safe = ops.maximum(target, 1.0)
            stirling = safe * ops.log(safe) - safe + 0.5 * ops.log(2.0 * math.pi * safe)
            loss = loss + ops.select(ops.greater(target, 1.0), stirling, ops.zeros_like(target))
        return self.get_loss(loss)


class GaussianNLLLoss(LossBase):
    """0.5 (log(max(var, eps)) + (x - target)^2 / max(var, eps)), + 0.5 log(2 pi) with full."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, self.eps = bool(full), _positive("GaussianNLLLoss", "eps", eps)

    def construct(self, logits, labels, var):
        v = ops.maximum(var, self.eps)
        loss = 0.5 * (ops.log(v) + (logits - labels) * (logits - labels) / v)
        if self.full:
            loss = loss + 0.5 * math.log(2 * math.pi)
        return self.get_loss(loss)


class MultiLabelSoftMarginLoss(LossBase):
    """Mean over classes of -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted per class."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = weight

    def construct(self, x, target):
        per = target * ops.softplus(-x) + (1.0 - target) * ops.softplus(x)
        if self.weight is not None:
            per = per * self.weight
        return self.get_loss(ops.mean(per, (-1,)))


class MultiMarginLoss(LossBase):
    """Sum over classes i != y of max(0, margin - x[y] + x[i])^p / C (p 1 or 2)."""

    def __init__(self, p=1, margin=1.0, reduction="mean", weight=None):
        super().__init__(reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: p must be 1 or 2, got {p}")
        self.p, self.margin, self.weight = p, float(margin), weight

    def construct(self, x, target, weight=None):
        n_classes = x.shape[-1]
        onehot = ops.one_hot(target, n_classes, 1.0, 0.0, -1, x.dtype)
        x_y = ops.sum(x * onehot, (-1,), True)
        hinge = ops.relu(self.margin - x_y + x) * (1.0 - onehot)
        if self.p == 2:
            hinge = hinge * hinge
        w = weight if weight is not None else self.weight
        if w is not None:
            hinge = hinge * ops.sum(onehot * w, (-1,), True)
        return self.get_loss(ops.sum(hinge, (-1,)) / n_classes)


class MultiLabelMarginLoss(LossBase):
    """Multi-class multi-label hinge: target holds class indices, the first -1 ending them; each
    sample's loss is the sum over its target classes j and non-target classes i of
    max(0, 1 - (x[j] - x[i])), over C. x (C,) or (N, C), target of the same shape."""

    def construct(self, x, target):
        n_classes = x.shape[-1]
        valid = ops.cast(ops.equal(ops.cumsum(ops.cast(ops.equal(target, -1), x.dtype), -1), 0.0), x.dtype)
        safe = ops.select(ops.equal(target, -1), ops.zeros_like(target), target)
        onehot = ops.one_hot(safe, n_classes, 1.0, 0.0, -1, x.dtype) * ops.expand_dims(valid, -1)  # (.., C, C)
        is_target = ops.max(onehot, (-2,))  # (.., C): class i is one of the targets
        x_t = ops.sum(onehot * ops.expand_dims(x, -2), (-1,))  # (.., C): x[target_j]
        margin = 1.0 - ops.expand_dims(x_t, -1) + ops.expand_dims(x, -2)  # (.., j, i)
        hinge = ops.relu(margin) * ops.expand_dims(valid, -1) * ops.expand_dims(1.0 - is_target, -2)
        return self.get_loss(ops.sum(hinge, (-2, -1)) / n_classes)


class TripletMarginLoss(LossBase):
    """max(0, d(a, p) - d(a, n) + margin), d the p-norm distance (plus eps) over the last axis;
    swap uses min(d(a, n), d(p, n))."""

    def __init__(self, p=2, swap=False, eps=1e-06, reduction="mean"):
        super().__init__(reduction)
        self.p, self.swap, self.eps = p, bool(swap), float(eps)

    def _dist(self, a, b):
        d = ops.abs(a - b + self.eps)
        if self.p == 1:
            return ops.sum(d, (-1,))
        return ops.pow(ops.sum(ops.pow(d, float(self.p)), (-1,)), 1.0 / self.p)

    def construct(self, x, positive, negative, margin=1.0):
        d_pos = self._dist(x, positive)
        d_neg = self._dist(x, negative)
        if self.swap:
            d_neg = ops.minimum(d_neg, self._dist(positive, negative))
        return self.get_loss(ops.relu(d_pos - d_neg + margin))


__all__ = ["MarginRankingLoss", "HuberLoss", "SoftMarginLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
           "KLDivLoss", "BCELoss", "PoissonNLLLoss", "GaussianNLLLoss", "MultiLabelSoftMarginLoss",
           "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginLoss"]
