"""MindSpore's CTCLoss primitive (TensorFlow's ctc_loss): logits (max_time, batch, classes) with
the blank as the last class, labels as a sparse tensor (indices (n, 2) of (batch, position),
values), returning each item's loss and the gradient of their sum with respect to the logits.
Built on the registry's ctc_loss (log-softmax first): the sparse labels are scattered into
(batch, n) padded targets, n being the label count, so every shape is static in graph mode."""
from mycel import _mycel
from mycel.common.dtype import int32, int64
from mycel.common.autodiff import grad as _grad
from mycel.ops.operations.compat_ops import _Composite

_ops = _mycel.ops


def _dense_labels(labels_indices, labels_values, batch):
    """(targets (batch, n) padded with 0, target lengths (batch,)) from the sparse labels."""
    n = labels_values.shape[0]
    idx = _ops.cast(labels_indices, int64)
    targets = _ops.tensor_scatter_add(_ops.zeros((batch, n), int32), idx, _ops.cast(labels_values, int32))
    rows = _ops.slice(idx, (0, 0), (n, 1))
    lengths = _ops.tensor_scatter_add(_ops.zeros((batch,), int32), rows, _ops.ones((n,), int32))
    return targets, lengths


class CTCLoss(_Composite):
    """(loss (batch,), gradient like x). ctc_merge_repeated=True is CTC's usual path (repeats
    need a blank between them); ignore_longer_outputs_than_inputs gives a 0 loss (and gradient)
    to items whose labels cannot fit their sequence_length."""

    def __init__(self, preprocess_collapse_repeated=False, ctc_merge_repeated=True,
                 ignore_longer_outputs_than_inputs=False):
        for name, v in (("preprocess_collapse_repeated", preprocess_collapse_repeated),
                        ("ctc_merge_repeated", ctc_merge_repeated),
                        ("ignore_longer_outputs_than_inputs", ignore_longer_outputs_than_inputs)):
            if not isinstance(v, bool):
                raise TypeError(f"CTCLoss: argument '{name}' must be a bool, got {type(v).__name__}")
        if preprocess_collapse_repeated or not ctc_merge_repeated:
            raise NotImplementedError("CTCLoss: only ctc_merge_repeated=True without "
                                      "preprocess_collapse_repeated is supported (CTC's usual form)")
        super().__init__(preprocess_collapse_repeated=preprocess_collapse_repeated,
                         ctc_merge_repeated=ctc_merge_repeated,
                         ignore_longer_outputs_than_inputs=ignore_longer_outputs_than_inputs)

    def _call(self, x, labels_indices, labels_values, sequence_length):
        targets, lengths = _dense_labels(labels_indices, labels_values, x.shape[1])
        blank = x.shape[2] - 1
        zero_inf = self.ignore_longer_outputs_than_inputs
        seq = _ops.cast(sequence_length, int32)

        def total(logits):
            return _ops.sum(_losses(logits, targets, seq, lengths, blank, zero_inf))
        return _losses(x, targets, seq, lengths, blank, zero_inf), _grad(total)(x)


def _losses(x, targets, seq, lengths, blank, zero_inf):
    loss, _ = _ops.ctc_loss(_ops.log_softmax(x, -1), targets, seq, lengths, blank, "none", zero_inf)
    return loss


COMPOSITES = ["CTCLoss"]
