"""MindSpore's sequence-loss primitives that return their gradient too. CTCLoss (TensorFlow's
ctc_loss): logits (max_time, batch, classes) with the blank as the last class, labels as a sparse
tensor (indices (n, 2) of (batch, position), values); built on the registry's ctc_loss
(log-softmax first), the sparse labels scattered into (batch, n) padded targets, n being the
label count, so every shape is static in graph mode. RNNTLoss (Graves 2012's transducer loss):
the forward variables over the (T, U + 1) lattice as ops, so autodiff gives the gradient."""
from mycel import _mycel
from mycel.common.dtype import int32, int64
from mycel.common.autodiff import grad as _grad
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

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


def _step(x, t):
    """x[:, t] of a (B, T, ...) tensor, by slice (graph mode unrolls the loops over t)."""
    return _ops.squeeze(_ops.slice(x, (0, t) + (0,) * (x.ndim - 2), (-1, 1) + (-1,) * (x.ndim - 2)), (1,))


def _column(x, u):
    """x[:, u] of a (B, U) tensor."""
    return _ops.squeeze(_ops.slice(x, (0, u), (-1, 1)), (1,))


def _logaddexp(a, b):
    m = _ops.maximum(a, b)
    return m + _ops.log(_ops.exp(a - m) + _ops.exp(b - m))


def _rnnt_losses(acts, labels, input_lengths, label_lengths, blank):
    """-log P(labels | acts) per batch item: alpha(t, u) = logaddexp(alpha(t-1, u) + blank(t-1, u),
    alpha(t, u-1) + emit(t, u-1)), the loss -(alpha(T_b-1, U_b) + blank(T_b-1, U_b))."""
    b, t_max, u1, _ = acts.shape
    logp = _ops.log_softmax(acts, -1)
    blank_lp = _ops.squeeze(_ops.slice(logp, (0, 0, 0, blank), (-1, -1, -1, 1)), (3,))  # (B, T, U+1)
    idx = _ops.broadcast_to(_ops.reshape(_ops.cast(labels, int64), (b, 1, u1 - 1, 1)), (b, t_max, u1 - 1, 1))
    emit = _ops.squeeze(_ops.gather_elements(_ops.slice(logp, (0, 0, 0, 0), (-1, -1, u1 - 1, -1)), idx, 3), (3,))
    # Row t = 0 only emits: a running sum. Each later row: from below (a blank at t - 1), then
    # left to right (an emission at t). Tensors only: graph mode unrolls these loops.
    prev = _ops.concat((_ops.zeros((b, 1), acts.dtype), _ops.cumsum(_step(emit, 0), 1)), 1)
    rows = (prev,)
    for t in range(1, t_max):
        below = prev + _step(blank_lp, t - 1)
        emit_t = _step(emit, t)
        left = _column(below, 0)
        row = (left,)
        for u in range(1, u1):
            left = _logaddexp(_column(below, u), left + _column(emit_t, u - 1))
            row += (left,)
        prev = _ops.stack(row, 1)
        rows += (prev,)
    alpha = _ops.stack(rows, 1)  # (B, T, U+1)
    batch = _ops.reshape(_ops.cast(_ops.arange(0, b, 1), int64), (b, 1))
    last = _ops.concat((batch, _ops.reshape(_ops.cast(input_lengths, int64) - 1, (b, 1)),
                        _ops.reshape(_ops.cast(label_lengths, int64), (b, 1))), 1)
    return -(_ops.gather_nd(alpha, last) + _ops.gather_nd(blank_lp, last))


class RNNTLoss(_Composite):
    """(costs (B,), gradient of their sum with respect to acts) for acts (B, T, U, V) (U = label
    length + 1), labels (B, U - 1), input_lengths, label_lengths. The lattice is unrolled at
    compile time: T x U small steps, for moderate sizes."""

    def __init__(self, blank_label=0):
        if isinstance(blank_label, bool) or not isinstance(blank_label, int) or blank_label < 0:
            raise ValueError(f"RNNTLoss: argument 'blank_label' must be an int >= 0, got {blank_label!r}")
        super().__init__(blank_label=blank_label)

    def _call(self, acts, labels, input_lengths, label_lengths):
        _check_rnnt(tuple(acts.shape), tuple(labels.shape), self.blank_label)

        def total(a):
            return _ops.sum(_rnnt_losses(a, labels, input_lengths, label_lengths, self.blank_label))
        return (_rnnt_losses(acts, labels, input_lengths, label_lengths, self.blank_label),
                _grad(total)(acts))


@constexpr
def _check_rnnt(acts_shape, labels_shape, blank):
    if len(acts_shape) != 4 or tuple(labels_shape) != (acts_shape[0], acts_shape[2] - 1) or \
            not blank < acts_shape[3]:
        raise ValueError(f"RNNTLoss: 'acts' must be (B, T, U, V) with 'labels' (B, U - 1) and blank_label < V, "
                         f"got acts {acts_shape}, labels {labels_shape}, blank_label {blank}")
    return True


COMPOSITES = ["CTCLoss", "RNNTLoss"]
