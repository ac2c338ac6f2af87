"""mindspore.mint.nn.functional: PyTorch-style neural-network functions over the registry ops
(input first, `dim`, `p` as the drop probability, linear weights of shape (out, in))."""
from mycel import ops as _ops
from mycel.ops import function_more as _more

relu, silu, sigmoid, tanh = _ops.relu, _ops.silu, _ops.sigmoid, _ops.tanh
hardswish, hardsigmoid, mish, selu = _more.hardswish, _more.hardsigmoid, _more.mish, _more.selu
l1_loss, kl_div = _more.l1_loss, _more.kl_div
binary_cross_entropy_with_logits = _ops.binary_cross_entropy_with_logits
binary_cross_entropy = _ops.binary_cross_entropy
interpolate = _ops.interpolate


def gelu(input, approximate="none"):
    """x * Phi(x) ('none') or its tanh approximation ('tanh')."""
    return _ops.gelu(input, approximate)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x."""
    return _ops.leaky_relu(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _ops.elu(input, alpha)


def softplus(input, beta=1, threshold=20):
    """log(1 + exp(beta x)) / beta (x itself above threshold / beta)."""
    return _ops.softplus(input, beta, threshold)


def softmax(input, dim=None, dtype=None):
    """softmax along dim (the last one when None)."""
    x = input if dtype is None else _ops.cast(input, dtype)
    return _ops.softmax(x, -1 if dim is None else dim)


def log_softmax(input, dim=None, dtype=None):
    """log(softmax) along dim (the last one when None)."""
    x = input if dtype is None else _ops.cast(input, dtype)
    return _ops.log_softmax(x, -1 if dim is None else dim)


def dropout(input, p=0.5, training=True, inplace=False):
    """Each element zeroed with probability p and the rest scaled by 1 / (1 - p) when training."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p!r}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _ops.zeros_like(input)
    return _ops.dropout(input, 1.0 - p)[0]  # (output, mask)


def linear(input, weight, bias=None):
    """input @ weight.T + bias, weight of shape (out_features, in_features)."""
    return _ops.dense(input, weight, bias)


def mse_loss(input, target, reduction="mean"):
    """(input - target)^2, reduced."""
    return _ops.mse_loss(input, target, reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """PyTorch's smooth L1 (reduction 'mean' by default)."""
    return _more.smooth_l1_loss(input, target, beta, reduction)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits input against class indices or class probabilities target."""
    return _ops.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """The negative log-likelihood of log-probabilities input at the target classes."""
    return _ops.nll_loss(input, target, weight, reduction, ignore_index)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot vectors (num_classes -1: the largest index + 1)."""
    from mycel.common.dtype import int64
    if num_classes == -1:
        num_classes = int(_ops.max(tensor).asnumpy()) + 1
    return _ops.one_hot(tensor, num_classes, 1, 0, -1, int64)


def pad(input, pad, mode="constant", value=0.0):
    """PyTorch's pad: `pad` lists (before, after) pairs from the last dimension backwards."""
    pairs = [tuple(pad[i:i + 2]) for i in range(0, len(pad), 2)]
    if len(pad) % 2 or len(pairs) > input.ndim:
        raise ValueError(f"pad: {len(pad)} values do not pair up for a {input.ndim}-d input")
    full = [(0, 0)] * (input.ndim - len(pairs)) + pairs[::-1]
    flat = tuple(v for pair in full for v in pair)
    return _ops.pad(input, flat, mode, 0.0 if value is None else value)


def max_pool2d(input, kernel_size, stride=None, padding=0):
    """Max pooling over (N, C, H, W) windows (stride defaults to the kernel)."""
    k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    s = k if stride is None else ((stride, stride) if isinstance(stride, int) else tuple(stride))
    p = (padding,) * 4 if isinstance(padding, int) else (padding[0], padding[0], padding[1], padding[1])
    return _ops.max_pool2d(input, k, s, "pad" if any(p) else "valid", p)


def avg_pool2d(input, kernel_size, stride=None, padding=0, count_include_pad=True):
    """Average pooling over (N, C, H, W) windows (stride defaults to the kernel)."""
    k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    s = k if stride is None else ((stride, stride) if isinstance(stride, int) else tuple(stride))
    p = (padding,) * 4 if isinstance(padding, int) else (padding[0], padding[0], padding[1], padding[1])
    return _ops.avg_pool2d(input, k, s, "pad" if any(p) else "valid", p, count_include_pad)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to output_size (an int or a pair)."""
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    return _ops.adaptive_avg_pool2d(input, size)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalization over the last len(normalized_shape) dimensions, then * weight + bias."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    mean = _ops.mean(input, axes, True)
    var = _ops.mean(_ops.square(input - mean), axes, True)
    y = (input - mean) * _ops.rsqrt(var + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def embedding(input, weight, padding_idx=None):
    """Rows of weight at the indices input."""
    return _ops.gather(weight, input, 0)


__all__ = [n for n in dir() if not n.startswith("_")]
