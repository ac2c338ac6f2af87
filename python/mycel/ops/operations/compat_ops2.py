"""More of MindSpore's primitive classes as composites of registry ops and the functional ops of
ops/function_more/: the inverse trigonometric and hyperbolic ops, Xlogy/Xdivy/DivNoNan/
MulNoNan, Mod/TruncateDiv/TruncateMod, SquaredDifference, Lerp/Addcdiv/Addcmul, Ger, Eps,
Meshgrid, ReverseV2, Unstack, UnsortedSegmentSum, ScatterNd, the activations (Mish, SeLU,
HShrink, HSigmoid, SoftShrink, PReLU, FastGeLU), the losses (SmoothL1Loss, SoftMarginLoss,
KLDivLoss, L2Loss), Cdist, LRN, Padding, MirrorPad, AssignAdd/AssignSub and the Inplace ops."""
from mycel import _mycel
from mycel.ops import function_more as _f
from mycel.ops.operations.compat_ops import _Composite

_ops = _mycel.ops


def _unary(name, fn, doc):
    return type(name, (_Composite,), {"_call": lambda self, x: fn(x), "__doc__": doc})


def _binary(name, fn, doc):
    return type(name, (_Composite,), {"_call": lambda self, x, y: fn(x, y), "__doc__": doc})


ACos = _unary("ACos", _f.acos, "arccos(x).")
Asin = _unary("Asin", _f.asin, "arcsin(x).")
Atan = _unary("Atan", _f.atan, "arctan(x).")
Acosh = _unary("Acosh", _f.acosh, "arccosh(x).")
Asinh = _unary("Asinh", _f.asinh, "arcsinh(x).")
Atanh = _unary("Atanh", _f.atanh, "arctanh(x).")
Cosh = _unary("Cosh", _f.cosh, "cosh(x).")
Sinh = _unary("Sinh", _f.sinh, "sinh(x).")
Trunc = _unary("Trunc", _f.trunc, "x rounded toward zero.")
Erfc = _unary("Erfc", _f.erfc, "1 - erf(x), accurate in the tails.")
Erfinv = _unary("Erfinv", _f.erfinv, "The inverse of erf.")
Mish = _unary("Mish", _f.mish, "x * tanh(softplus(x)).")
SeLU = _unary("SeLU", _f.selu, "The scaled ELU.")
HSigmoid = _unary("HSigmoid", _f.hardsigmoid, "relu6(x + 3) / 6.")
FastGeLU = _unary("FastGeLU", _f.fast_gelu, "x * sigmoid(1.702 x).")
Eps = _unary("Eps", _f.eps, "x's shape filled with its dtype's smallest positive value.")
L2Loss = _unary("L2Loss", lambda x: _ops.sum(x * x) / 2.0, "sum(x^2) / 2.")
Xlogy = _binary("Xlogy", _f.xlogy, "x * log(y), 0 where x is 0.")
SquaredDifference = _binary("SquaredDifference", lambda x, y: (x - y) * (x - y), "(x - y)^2.")
Mod = _binary("Mod", _f.fmod, "x - trunc(x / y) * y: the dividend's sign.")
TruncateMod = _binary("TruncateMod", _f.fmod, "x - trunc(x / y) * y.")
TruncateDiv = _binary("TruncateDiv", lambda x, y: _f.divide(x, y, rounding_mode="trunc"), "x / y rounded toward zero.")
Ger = _binary("Ger", _f.outer, "The outer product of two 1-d tensors.")
PReLU = _binary("PReLU", _f.prelu, "max(0, x) + weight * min(0, x), weight per channel.")


def _where_zero(mask, value):
    return _ops.select(mask, _ops.zeros_like(value), value)


class Xdivy(_Composite):
    """x / y, 0 where x is 0."""

    def _call(self, x, y):
        zero = _ops.equal(x * _ops.ones_like(y), 0)
        safe = _ops.select(zero, _ops.ones_like(y * _ops.ones_like(x)), y * _ops.ones_like(x))
        return _where_zero(zero, _ops.div(x, safe))


class DivNoNan(_Composite):
    """x / y, 0 where y is 0."""

    def _call(self, x, y):
        yb = y * _ops.ones_like(x)
        zero = _ops.equal(yb, 0)
        return _where_zero(zero, _ops.div(x, _ops.select(zero, _ops.ones_like(yb), yb)))


class MulNoNan(_Composite):
    """x * y, 0 where y is 0 (even when x is inf or NaN)."""

    def _call(self, x, y):
        yb = y * _ops.ones_like(x)
        return _where_zero(_ops.equal(yb, 0), x * yb)


class Lerp(_Composite):
    """start + weight * (end - start)."""

    def _call(self, start, end, weight):
        return _f.lerp(start, end, weight)


class Addcdiv(_Composite):
    """input_data + value * x1 / x2."""

    def _call(self, input_data, x1, x2, value):
        return _f.addcdiv(input_data, x1, x2, value)


class Addcmul(_Composite):
    """input_data + value * x1 * x2."""

    def _call(self, input_data, x1, x2, value):
        return _f.addcmul(input_data, x1, x2, value)


class HShrink(_Composite):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__(lambd=float(lambd))

    def _call(self, x):
        return _f.hardshrink(x, self.lambd)


class SoftShrink(_Composite):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__(lambd=float(lambd))

    def _call(self, x):
        return _f.softshrink(x, self.lambd)


class Meshgrid(_Composite):
    """Coordinate grids of a tuple of 1-d tensors ('xy' or 'ij' indexing)."""

    def __init__(self, indexing="xy"):
        if indexing not in ("xy", "ij"):
            raise ValueError(f"Meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
        super().__init__(indexing=indexing)

    def _call(self, inputs):
        return _f.meshgrid_of(inputs, self.indexing)


class ReverseV2(_Composite):
    """x reversed along axis (a tuple of dims)."""

    def __init__(self, axis):
        super().__init__(axis=tuple(axis))

    def _call(self, x):
        return _f.flip(x, self.axis)


class Unstack(_Composite):
    """The slices of x along axis, as a tuple."""

    def __init__(self, axis=0, num=None):
        super().__init__(axis=axis)

    def _call(self, x):
        return _f.unbind(x, self.axis)


class UnsortedSegmentSum(_Composite):
    """out[s] = the sum of x's slices whose segment id is s."""

    def _call(self, x, segment_ids, num_segments):
        return _f.unsorted_segment_sum(x, segment_ids, num_segments)


class ScatterNd(_Composite):
    """Zeros of `shape` with updates added at indices."""

    def _call(self, indices, updates, shape):
        return _f.scatter_nd(indices, updates, shape)


class SmoothL1Loss(_Composite):
    """The smooth L1 loss per element (reduction 'none' by default)."""

    def __init__(self, beta=1.0, reduction="none"):
        super().__init__(beta=float(beta), reduction=reduction)

    def _call(self, logits, labels):
        return _f.smooth_l1_loss(logits, labels, self.beta, self.reduction)


class SoftMarginLoss(_Composite):
    """log(1 + exp(-y x)), reduced."""

    def __init__(self, reduction="mean"):
        super().__init__(reduction=reduction)

    def _call(self, x, y):
        return _f.soft_margin_loss(x, y, self.reduction)


class KLDivLoss(_Composite):
    """labels * (log(labels) - logits), reduced ('mean', 'sum', 'batchmean' or 'none')."""

    def __init__(self, reduction="mean"):
        super().__init__(reduction=reduction)

    def _call(self, logits, labels):
        return _f.kl_div(logits, labels, self.reduction)


class Cdist(_Composite):
    """p-norm distances between the rows of two batches of points."""

    def __init__(self, p=2.0):
        super().__init__(p=float(p))

    def _call(self, x1, x2):
        return _f.cdist(x1, x2, self.p)


class LRN(_Composite):
    """Local response normalization across channels (TensorFlow's form)."""

    def __init__(self, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, norm_region="ACROSS_CHANNELS"):
        super().__init__(depth_radius=int(depth_radius), bias=float(bias), alpha=float(alpha),
                         beta=float(beta), norm_region=norm_region)

    def _call(self, x):
        return _f.lrn(x, self.depth_radius, self.bias, self.alpha, self.beta, self.norm_region)


class Padding(_Composite):
    """The last dimension (of size 1) extended to pad_dim_size with zeros."""

    def __init__(self, pad_dim_size=8):
        if pad_dim_size < 1:
            raise ValueError(f"Padding: pad_dim_size must be >= 1, got {pad_dim_size!r}")
        super().__init__(pad_dim_size=int(pad_dim_size))

    def _call(self, x):
        if x.shape[-1] != 1:
            raise ValueError(f"Padding: the last dimension must be 1, got shape {tuple(x.shape)}")
        return _ops.pad(x, (0, 0) * (x.ndim - 1) + (0, self.pad_dim_size - 1))


class MirrorPad(_Composite):
    """x padded by paddings ((before, after) rows, a tensor or tuple) in mode REFLECT or SYMMETRIC."""

    def __init__(self, mode="REFLECT"):
        if mode not in ("REFLECT", "SYMMETRIC"):
            raise ValueError(f"MirrorPad: mode must be 'REFLECT' or 'SYMMETRIC', got {mode!r}")
        super().__init__(mode=mode)

    def _call(self, x, paddings):
        from mycel.nn.layer.padding import Pad
        rows = paddings.asnumpy().tolist() if hasattr(paddings, "asnumpy") else paddings
        return Pad(tuple(tuple(int(v) for v in r) for r in rows), self.mode)(x)


class Einsum(_Composite):
    """Einstein summation of a tuple of tensors (the equation fixed at construction)."""

    def __init__(self, equation):
        if not isinstance(equation, str):
            raise TypeError(f"Einsum: equation must be a str, got {type(equation).__name__}")
        super().__init__(equation=equation)

    def _call(self, inputs):
        return _f.einsum(self.equation, *inputs)


class TensorScatterSub(_Composite):
    """input_x with updates subtracted at indices."""

    def _call(self, input_x, indices, updates):
        return _f.tensor_scatter_sub(input_x, indices, updates)


class ScatterUpdate(_Composite):
    """input_x[indices] = updates on a Parameter."""

    def __init__(self, use_locking=True):
        super().__init__(use_locking=use_locking)

    def _call(self, input_x, indices, updates):
        return _f.scatter_update(input_x, indices, updates)


class IndexAdd(_Composite):
    """x (a Parameter) with y's slices added at indices along axis."""

    def __init__(self, axis, use_lock=True, check_index_bound=True):
        super().__init__(axis=axis)

    def _call(self, x, indices, y):
        return _f.index_add(x, indices, y, self.axis)


class AssignAdd(_Composite):
    """variable += value (a Parameter); returns it."""

    def _call(self, variable, value):
        return _f.assign_add(variable, value)


class AssignSub(_Composite):
    """variable -= value (a Parameter); returns it."""

    def _call(self, variable, value):
        return _f.assign_sub(variable, value)


class InplaceUpdate(_Composite):
    """x with rows `indices` replaced by v (MindSpore's returns a new tensor)."""

    def __init__(self, indices):
        super().__init__(indices=(indices,) if isinstance(indices, int) else tuple(indices))

    def _call(self, x, v):
        return _f.inplace_update(x, v, self.indices)


class InplaceAdd(_Composite):
    """x with v added to rows `indices`."""

    def __init__(self, indices):
        super().__init__(indices=(indices,) if isinstance(indices, int) else tuple(indices))

    def _call(self, x, v):
        return _f.inplace_add(x, v, self.indices)


class InplaceSub(_Composite):
    """x with v subtracted from rows `indices`."""

    def __init__(self, indices):
        super().__init__(indices=(indices,) if isinstance(indices, int) else tuple(indices))

    def _call(self, x, v):
        return _f.inplace_sub(x, v, self.indices)


COMPOSITES = [n for n, v in dict(globals()).items()
              if isinstance(v, type) and issubclass(v, _Composite) and v is not _Composite]
