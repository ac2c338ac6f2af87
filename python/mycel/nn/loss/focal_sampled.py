"""MindSpore's FocalLoss and SampledSoftmaxLoss, composed of registry ops."""
import numpy as np

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.tensor import Tensor
from mycel.nn.loss.loss import LossBase
from mycel.ops.primitive import constexpr


@constexpr
def _focal_shapes(logits_shape, labels_shape):
    """(N, C, S) for logits and whether labels are class ids (channel 1) or per-class targets."""
    if len(logits_shape) != len(labels_shape) or len(logits_shape) < 2:
        raise ValueError(f"FocalLoss: labels {tuple(labels_shape)} must have the rank of logits {tuple(logits_shape)} "
                         f"(>= 2)")
    if labels_shape[1] != 1 and tuple(labels_shape) != tuple(logits_shape):
        raise ValueError(f"FocalLoss: labels must have 1 channel (class ids) or logits' shape {tuple(logits_shape)}, "
                         f"got {tuple(labels_shape)}")
    spatial = int(np.prod(logits_shape[2:])) if len(logits_shape) > 2 else 1
    return (logits_shape[0], logits_shape[1], spatial), (labels_shape[0], labels_shape[1], spatial), labels_shape[1] == 1


class FocalLoss(LossBase):
    """-(1 - p_t)^gamma log(p_t) with p_t the softmax probability of the target (Lin et al.):
    logits (N, C) or (N, C, H[, W]); labels (N, 1, ...) class ids or (N, C, ...) per-class
    targets; weight (C,) rescales each class's log-probability. Per sample, the mean over the
    spatial positions (class ids) or over them per class (targets), as MindSpore's."""

    def __init__(self, weight=None, gamma=2.0, reduction="mean"):
        super().__init__(reduction)
        if isinstance(gamma, bool) or not isinstance(gamma, float):
            raise TypeError(f"FocalLoss: gamma must be a float, got {type(gamma).__name__}")
        if weight is not None and not isinstance(weight, Tensor):
            raise TypeError(f"FocalLoss: weight must be a Tensor or None, got {type(weight).__name__}")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"FocalLoss: weight must be 1-d (one per class), got rank {weight.ndim}")
        self.weight, self.gamma = weight, gamma

    def construct(self, logits, labels):
        lshape, tshape, ids = _focal_shapes(tuple(logits.shape), tuple(labels.shape))
        logp = ops.log_softmax(ops.reshape(logits, lshape), 1)
        target = ops.reshape(labels, tshape)
        weight = None
        if self.weight is not None:
            weight = ops.broadcast_to(ops.reshape(ops.cast(self.weight, logp.dtype), (1, -1, 1)), lshape)
        if ids:
            index = ops.cast(target, mstype.int64)
            logp = ops.squeeze(ops.gather_elements(logp, 1, index), (1,))             # (N, S)
            if weight is not None:
                weight = ops.squeeze(ops.gather_elements(weight, 1, index), (1,))
        factor = ops.pow(1.0 - ops.exp(logp), self.gamma)  # from the unweighted probability
        if weight is not None:
            logp = logp * weight
        if ids:
            return self.get_loss(ops.mean(-factor * logp, (1,)))
        return self.get_loss(ops.mean(-factor * ops.cast(target, logp.dtype) * logp, (-1,)))


class SampledSoftmaxLoss(LossBase):
    """Softmax cross entropy over the true classes and num_sampled sampled classes only (Jean
    et al.; TensorFlow's sampled_softmax_loss): logits corrected by the log expected counts,
    sampled classes equal to a true label masked out (remove_accidental_hits). Samples come
    from the log-uniform sampler (seed) unless sampled_values = (sampled, true_expected_count,
    sampled_expected_count) fixes them. construct(weights (C, D), biases (C,), labels (B,
    num_true), logits (B, D)) gives the loss per row, reduced."""

    def __init__(self, num_sampled, num_classes, num_true=1, sampled_values=None, remove_accidental_hits=True,
                 seed=0, reduction="none"):
        super().__init__(reduction)
        for arg, v in (("num_sampled", num_sampled), ("num_classes", num_classes), ("num_true", num_true)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"SampledSoftmaxLoss: {arg} must be an int >= 1, got {v!r}")
        if num_sampled > num_classes:
            raise ValueError(f"SampledSoftmaxLoss: num_sampled ({num_sampled}) must not exceed num_classes "
                             f"({num_classes})")
        if sampled_values is not None and (not isinstance(sampled_values, (tuple, list)) or len(sampled_values) != 3):
            raise TypeError("SampledSoftmaxLoss: sampled_values must be (sampled, true_expected_count, "
                            "sampled_expected_count) or None")
        self.num_sampled, self.num_classes, self.num_true = num_sampled, num_classes, num_true
        self.sampled_values = None if sampled_values is None else tuple(sampled_values)
        self.remove_accidental_hits, self.seed = bool(remove_accidental_hits), int(seed)
        self._sampler = ops.LogUniformCandidateSampler(num_true, num_sampled, True, num_classes, int(seed))

    def construct(self, weights, biases, labels, logits):
        labels = ops.cast(ops.reshape(labels, (-1, self.num_true)), mstype.int64)
        if self.sampled_values is None:
            sampled, true_count, sampled_count = self._sampler(labels)
        else:
            sampled, true_count, sampled_count = self.sampled_values
        sampled = ops.cast(sampled, mstype.int64)
        b, d = logits.shape[0], logits.shape[1]
        true_w = ops.reshape(ops.gather(weights, ops.reshape(labels, (-1,)), 0), (b, self.num_true, d))
        true_b = ops.reshape(ops.gather(biases, ops.reshape(labels, (-1,)), 0), (b, self.num_true))
        true_logits = ops.sum(ops.expand_dims(logits, 1) * true_w, (-1,)) + true_b \
            - ops.log(ops.cast(true_count, logits.dtype))
        sampled_logits = ops.matmul(logits, ops.transpose(ops.gather(weights, sampled, 0), (1, 0))) \
            + ops.gather(biases, sampled, 0) - ops.log(ops.cast(sampled_count, logits.dtype))
        if self.remove_accidental_hits:
            hits = ops.any(ops.equal(ops.expand_dims(labels, 2), ops.reshape(sampled, (1, 1, -1))), (1,))
            sampled_logits = ops.select(hits, ops.zeros_like(sampled_logits) - 3.4e38, sampled_logits)
        all_logits = ops.concat((true_logits, sampled_logits), 1)
        targets = ops.concat((ops.ones_like(true_logits) / float(self.num_true), ops.zeros_like(sampled_logits)), 1)
        loss = -ops.sum(targets * ops.log_softmax(all_logits, 1), (1,))
        return self.get_loss(loss)


__all__ = ["FocalLoss", "SampledSoftmaxLoss"]
