"""nn.CTCLoss: MindSpore's CTC loss Cell over ops.ctc_loss (the registry op, which also returns
log_alpha)."""
from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell


def _pad_concatenated(targets, target_lengths):
    """(N, L) padded targets from MindSpore's 1-d form: every item's targets one after another
    (target_lengths[i] of them), L the total. Row i reads targets[offset_i + j] for j below its
    length (offset_i the sum of the lengths before it) and 0 past it (never read by the loss)."""
    lengths = ops.cast(target_lengths, mstype.int64)
    total = targets.shape[0]
    offsets = ops.cumsum(lengths, 0, exclusive=True)
    j = ops.expand_dims(ops.arange(start=0, limit=total, dtype=mstype.int64), 0)
    pos = ops.expand_dims(offsets, 1) + j
    inside = ops.less(j, ops.expand_dims(lengths, 1))
    safe = ops.select(inside, pos, ops.zeros_like(pos))  # in range wherever it is read
    picked = ops.gather(targets, safe, 0)
    return ops.select(inside, picked, ops.zeros_like(picked))


class CTCLoss(Cell):
    """Connectionist temporal classification loss. construct(log_probs, targets, input_lengths,
    target_lengths): log_probs (T, N, C) log-probabilities (or (T, C) unbatched), targets (N, S)
    padded class indices, or (sum(target_lengths),) with the batch's targets concatenated (or (S,)
    unbatched), lengths (N,) (or scalars unbatched). reduction "mean" divides
    each item's loss by its target length and averages over the batch; zero_infinity turns the
    infinite loss of an impossible alignment (and its gradient) into 0."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__()
        if isinstance(blank, bool) or not isinstance(blank, int) or blank < 0:
            raise ValueError(f"CTCLoss: blank must be a non-negative int, got {blank!r}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"CTCLoss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.blank, self.reduction, self.zero_infinity = blank, reduction, bool(zero_infinity)

    def construct(self, log_probs, targets, input_lengths, target_lengths):
        check_rank("CTCLoss", "log_probs", log_probs.ndim, (2, 3))
        if log_probs.ndim == 2:  # one unbatched sequence: a batch of one
            loss, _ = ops.ctc_loss(ops.expand_dims(log_probs, 1), ops.reshape(targets, (1, -1)),
                                   ops.reshape(input_lengths, (1,)), ops.reshape(target_lengths, (1,)),
                                   blank=self.blank, reduction=self.reduction, zero_infinity=self.zero_infinity)
            return ops.reshape(loss, ()) if self.reduction == "none" else loss
        if targets.ndim == 1:  # the targets of the whole batch concatenated
            if targets.shape[0] == 0:
                targets = ops.zeros((log_probs.shape[1], 1), targets.dtype)
            else:
                targets = _pad_concatenated(targets, target_lengths)
        loss, _ = ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=self.blank,
                               reduction=self.reduction, zero_infinity=self.zero_infinity)
        return loss


__all__ = ["CTCLoss"]
