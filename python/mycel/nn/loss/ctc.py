"""nn.CTCLoss: MindSpore's CTC loss Cell over ops.ctc_loss (the registry op, which also returns
log_alpha)."""
from mycel import ops
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell


class CTCLoss(Cell):
    """Connectionist temporal classification loss. construct(log_probs, targets, input_lengths,
    target_lengths): log_probs (T, N, C) log-probabilities (or (T, C) unbatched), targets (N, S)
    padded class indices (or (S,)), lengths (N,) (or scalars unbatched). reduction "mean" divides
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
        loss, _ = ops.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=self.blank,
                               reduction=self.reduction, zero_infinity=self.zero_infinity)
        return loss


__all__ = ["CTCLoss"]
