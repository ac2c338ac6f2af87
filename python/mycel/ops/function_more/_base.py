"""What the function_more modules share: dtype helpers and the Tensor-method composites
(tensor_composites.py) under their functional names."""
from mycel import _mycel
from mycel.common.dtype import float16, bfloat16, float32, float64, complex64, complex128
from mycel.ops import tensor_composites as _tc
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


@constexpr
def _dims_from(shape, k):
    """shape[k:] (graph mode slices tuples by literal bounds only; this runs at compile time)."""
    return tuple(shape[k:])

# ---- the Tensor-method composites under their functional names ---------------------------------
acos = arccos = _tc.acos
asin = arcsin = _tc.asin
atan = arctan = _tc.atan
sinh, cosh = _tc.sinh, _tc.cosh
asinh = arcsinh = _tc.asinh
acosh = arccosh = _tc.acosh
atanh = arctanh = _tc.atanh
log2, log10, trunc, fix = _tc.log2, _tc.log10, _tc.trunc, _tc.trunc
xlogy, lerp, addmm, t = _tc.xlogy, _tc.lerp, _tc.addmm, _tc.t
swapaxes = swapdims = _tc.swapaxes
flip, tensor_split, hsplit, vsplit, dsplit = _tc.flip, _tc.tensor_split, _tc.hsplit, _tc.vsplit, _tc.dsplit
unbind, isclose, nan_to_num, narrow, ravel = _tc.unbind, _tc.isclose, _tc.nan_to_num, _tc.narrow, _tc.ravel


def _axis(x, axis):
    return axis % x.ndim if x.ndim else 0


_FLOATS = (float16, bfloat16, float32, float64)
_COMPLEX = (complex64, complex128)


def _float_like(x):
    return x if x.dtype in _FLOATS else _ops.cast(x, float32)


