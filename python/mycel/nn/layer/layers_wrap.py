"""More of mindspore.nn: BiDense, EmbeddingLookup, TimeDistributed, ForwardValueAndGrad, adaptive
max pooling (1d, 2d) and adaptive average pooling 3d, MultiClassDiceLoss and
MultilabelMarginLoss."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import Uniform, initializer
from mycel.common.parameter import Parameter
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param
from mycel.nn.layer.layers_extra import DiceLoss
from mycel.nn.loss.loss import LossBase
from mycel.ops.primitive import constexpr


class BiDense(Cell):
    """y = x1^T A x2 + b: weight (out_channels, in1_channels, in2_channels); default init
    U(-1/sqrt(in1), 1/sqrt(in1)) for both, as MindSpore's."""

    def __init__(self, in1_channels, in2_channels, out_channels, weight_init=None, bias_init=None,
                 has_bias=True, dtype=mstype.float32):
        super().__init__()
        self.in1 = check_int(in1_channels, "BiDense", "in1_channels")
        self.in2 = check_int(in2_channels, "BiDense", "in2_channels")
        self.out = check_int(out_channels, "BiDense", "out_channels")
        bound = 1 / math.sqrt(self.in1)
        self.weight = make_param(weight_init if weight_init is not None else Uniform(bound),
                                 (self.out, self.in1, self.in2), dtype, "weight")
        self.has_bias = bool(has_bias)
        self.bias = make_param(bias_init if bias_init is not None else Uniform(bound), (self.out,), dtype,
                               "bias") if self.has_bias else None

    def construct(self, input1, input2):
        lead = input1.shape[:-1]
        y = ops.einsum("bi,oij,bj->bo", input1.reshape((-1, self.in1)), self.weight,
                       input2.reshape((-1, self.in2)))
        if self.has_bias:
            y = y + self.bias
        return y.reshape(tuple(lead) + (self.out,))


class EmbeddingLookup(Cell):
    """Rows of a (vocab_size, embedding_size) table at integer ids (MindSpore's EmbeddingLookup;
    on one CPU the target/slice_mode/sparse options change nothing); max_norm clips each looked-up
    row's L2 norm."""

    def __init__(self, vocab_size, embedding_size, param_init="normal", target="CPU", slice_mode="batch_slice",
                 manual_shapes=None, max_norm=None, sparse=True, vocab_cache_size=0, dtype=mstype.float32):
        super().__init__()
        self.vocab_size = check_int(vocab_size, "EmbeddingLookup", "vocab_size")
        self.embedding_size = check_int(embedding_size, "EmbeddingLookup", "embedding_size")
        if target not in ("CPU", "DEVICE"):
            raise ValueError(f"EmbeddingLookup: target must be 'CPU' or 'DEVICE', got {target!r}")
        self.max_norm = None if max_norm is None else float(max_norm)
        self.embedding_table = Parameter(initializer(param_init, (vocab_size, embedding_size), dtype),
                                         name="embedding_table")

    def construct(self, indices):
        rows = ops.gather(self.embedding_table, indices, 0)
        if self.max_norm is None:
            return rows
        norm = ops.sqrt(ops.sum(rows * rows, (-1,), True))
        return rows * ops.minimum(self.max_norm / ops.maximum(norm, 1e-12), 1.0)


class TimeDistributed(Cell):
    """Applies `layer` (a Cell or a Primitive) to every step along `time_axis`. With
    `reshape_with_axis`, the time axis is moved next to that axis and merged into it, the layer
    runs once on the merged batch and its output is split back (the layer must keep the merged
    axis where it was); without, the layer runs on each step and the results are stacked."""

    def __init__(self, layer, time_axis, reshape_with_axis=None):
        super().__init__()
        if not isinstance(layer, Cell) and not callable(layer):
            raise TypeError(f"TimeDistributed: layer must be a Cell or a Primitive, got {type(layer).__name__}")
        self.layer = layer
        self.time_axis = _axis_arg("time_axis", time_axis)
        self.reshape_with_axis = None if reshape_with_axis is None else _axis_arg("reshape_with_axis",
                                                                                  reshape_with_axis)

    def construct(self, inputs):
        nd = inputs.ndim
        t = self.time_axis % nd
        if self.reshape_with_axis is None:
            steps = ops.unstack(inputs, t)
            return ops.stack(tuple(self.layer(x) for x in steps), t)
        perm, p = _merge_plan(nd, t, self.reshape_with_axis % nd)
        x = ops.transpose(inputs, perm)
        y = self.layer(x.reshape(_merged(x.shape, p)))
        return y.reshape(_split(y.shape, x.shape, p))


def _axis_arg(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"TimeDistributed: '{name}' must be an int, got {value!r}")
    return value


@constexpr
def _merge_plan(ndim, t, r):
    """(permutation, p): the time axis t moved next to axis r (after it, or before when r is the
    last axis or follows t), so that axes p and p + 1 are the pair to merge."""
    if t == r:
        raise ValueError(f"TimeDistributed: reshape_with_axis ({r}) must differ from time_axis ({t})")
    dest = r + 1 if t > r else r - 1
    order = [d for d in range(ndim) if d != t]
    order.insert(dest, t)
    return tuple(order), min(dest, order.index(r))


@constexpr
def _merged(shape, p):
    """shape with axes p and p + 1 merged into one."""
    return tuple(shape[:p]) + (-1,) + tuple(shape[p + 2:])


@constexpr
def _split(out_shape, in_shape, p):
    """The layer's output shape with its axis p split back into in_shape's axes p and p + 1."""
    if p >= len(out_shape):
        raise ValueError(f"TimeDistributed: the layer's output has rank {len(out_shape)}, so it lost the merged "
                         f"axis {p} that reshape_with_axis names; pass no reshape_with_axis")
    return tuple(out_shape[:p]) + tuple(in_shape[p:p + 2]) + tuple(out_shape[p + 1:])


class ForwardValueAndGrad(Cell):
    """(loss, gradients) of a network: with respect to the first input (default), all inputs
    (get_all), the weights (get_by_list), or both; sens_param takes the output's sensitivity as the
    last input."""

    def __init__(self, network, weights=None, get_all=False, get_by_list=False, sens_param=False):
        super().__init__()
        if get_by_list and weights is None:
            raise ValueError("ForwardValueAndGrad: get_by_list=True needs weights")
        self.network, self.weights = network, weights
        self.get_all, self.get_by_list, self.sens_param = bool(get_all), bool(get_by_list), bool(sens_param)

    def __call__(self, *inputs):
        from mycel.common.autodiff import value_and_grad
        args = inputs[:-1] if self.sens_param else inputs
        sens = inputs[-1] if self.sens_param else None

        def objective(*xs):
            out = self.network(*xs)
            return (out * sens).sum() if sens is not None else out

        positions = tuple(range(len(args))) if self.get_all else (0 if not self.get_by_list else None)
        weights = self.weights if self.get_by_list else None
        value, grads = value_and_grad(objective, positions, weights)(*args)
        if sens is not None:
            value = self.network(*args)
        return value, grads


def _windows(size, out):
    """(start, length) of adaptive pooling's windows: floor(i size / out) .. ceil((i + 1) size / out)."""
    return tuple((i * size // out, -(-(i + 1) * size // out) - i * size // out) for i in range(out))


@constexpr
def _adaptive_plan(shape, output_size):
    sizes = (output_size,) * len(shape) if isinstance(output_size, int) else tuple(
        s if o is None else o for s, o in zip(shape, output_size))
    return tuple(_windows(s, o) for s, o in zip(shape, sizes))


def _adaptive_pool(x, plan, reduce, axis):
    """Pooling of x's dims axis, axis + 1, ... over the windows of plan (one reduce per window)."""
    if not plan:
        return x
    pieces = []
    for start, length in plan[0]:
        window = ops.slice(x, tuple(start if d == axis else 0 for d in range(x.ndim)),
                           tuple(length if d == axis else x.shape[d] for d in range(x.ndim)))
        pieces.append(reduce(window, (axis,), True))
    return _adaptive_pool(ops.concat(pieces, axis), plan[1:], reduce, axis + 1)


class AdaptiveMaxPool1d(Cell):
    """Max pooling of (N, C, L) to output_size positions (windows as PyTorch's)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def construct(self, x):
        return _adaptive_pool(x, _adaptive_plan(x.shape[-1:], self.output_size), ops.max, x.ndim - 1)


class AdaptiveMaxPool2d(Cell):
    """Max pooling of (N, C, H, W) to output_size (an int, a pair, None keeps a size); with
    return_indices also the int64 position h * W + w of each maximum in its input plane."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        if not isinstance(return_indices, bool):
            raise TypeError(f"AdaptiveMaxPool2d: argument 'return_indices' must be a bool, "
                            f"got {type(return_indices).__name__}")
        self.output_size = output_size
        self.return_indices = return_indices

    def construct(self, x):
        check_rank("AdaptiveMaxPool2d", "x", x.ndim, (3, 4))
        if self.return_indices:
            return ops.adaptive_max_pool2d(x, self.output_size, True)
        return _adaptive_pool(x, _adaptive_plan(x.shape[-2:], self.output_size), ops.max, x.ndim - 2)


class AdaptiveAvgPool3d(Cell):
    """Average pooling of (N, C, D, H, W) to output_size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def construct(self, x):
        return _adaptive_pool(x, _adaptive_plan(x.shape[-3:], self.output_size), ops.mean, x.ndim - 3)


class MultiClassDiceLoss(LossBase):
    """The mean over classes of DiceLoss(activation(logits)[:, i], label[:, i]) (class weights
    and an ignored class as MindSpore's; activation 'softmax', 'sigmoid' or None)."""

    def __init__(self, weights=None, ignore_indiex=None, activation="softmax"):
        super().__init__()
        if activation not in ("softmax", "sigmoid", None):
            raise ValueError(f"MultiClassDiceLoss: activation must be 'softmax', 'sigmoid' or None, got {activation!r}")
        self.weights, self.ignore, self.activation = weights, ignore_indiex, activation
        self.dice = DiceLoss()

    def construct(self, logits, label):
        if self.activation == "softmax":
            logits = ops.softmax(logits, 1)
        elif self.activation == "sigmoid":
            logits = ops.sigmoid(logits)
        total = 0.0
        for i in range(label.shape[1]):
            if i != self.ignore:
                loss = self.dice(logits[:, i], label[:, i])
                if self.weights is not None:
                    loss = loss * self.weights[i]
                total = total + loss
        return total / label.shape[1]


class MultilabelMarginLoss(LossBase):
    """PyTorch's multilabel hinge loss: targets hold class indices up to the first -1; per sample
    sum over targets j and non-targets i of max(0, 1 - (x[j] - x[i])) / C, reduced."""

    def __init__(self, reduction="mean"):
        super().__init__(reduction)

    def construct(self, x, target):
        c = x.shape[-1]
        valid = ops.cumprod(ops.cast(ops.not_equal(target, -1), mstype.int32), -1)
        safe = ops.select(ops.cast(valid, mstype.bool_), target, ops.zeros_like(target))
        hits = ops.one_hot(safe, c) * ops.expand_dims(ops.cast(valid, x.dtype), -1)
        is_target = ops.minimum(ops.sum(hits, (-2,)), 1.0)          # (..., C)
        xt = ops.sum(hits * ops.expand_dims(x, -2), (-1,))          # (..., C) the target scores
        margins = ops.relu(1.0 - (ops.expand_dims(xt, -1) - ops.expand_dims(x, -2)))
        pair = ops.expand_dims(ops.cast(valid, x.dtype), -1) * ops.expand_dims(1.0 - is_target, -2)
        return self.get_loss(ops.sum(margins * pair, (-2, -1)) / c)


__all__ = ["BiDense", "EmbeddingLookup", "TimeDistributed", "ForwardValueAndGrad", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveAvgPool3d", "MultiClassDiceLoss", "MultilabelMarginLoss"]
