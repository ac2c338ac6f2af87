"""Primitive forms of functionals Mycel already has (MindSpore's CeLU, SearchSorted, FillDiagonal,
InplaceUpdateV2): attributes checked once in __init__, the call composed of registry ops."""
from mycel.common.dtype import int32, int64
from mycel.ops.function_more.array import inplace_update
from mycel.ops.function_more.nn import celu
from mycel.ops.function_more.reductions import searchsorted
from mycel.ops.function_more.scatter_more import fill_diagonal
from mycel.ops.operations.compat_ops import _Composite


class CeLU(_Composite):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)); alpha a nonzero float."""

    def __init__(self, alpha=1.0):
        if not isinstance(alpha, float):
            raise TypeError(f"CeLU: 'alpha' must be a float, got {type(alpha).__name__}")
        if alpha == 0:
            raise ValueError("CeLU: 'alpha' must not be 0")
        super().__init__(alpha=alpha)

    def _call(self, input_x):
        return celu(input_x, self.alpha)


class SearchSorted(_Composite):
    """Per value, its insertion index into the last dimension of sorted_sequence (before equal
    elements; after them with right=True), as dtype int32 or int64."""

    def __init__(self, dtype=int64, right=False):
        if dtype not in (int32, int64):
            raise TypeError(f"SearchSorted: 'dtype' must be int32 or int64, got {dtype}")
        if not isinstance(right, bool):
            raise TypeError(f"SearchSorted: 'right' must be a bool, got {type(right).__name__}")
        super().__init__(dtype=dtype, right=right)

    def _call(self, sorted_sequence, values):
        return searchsorted(sorted_sequence, values, out_int32=self.dtype == int32, right=self.right)


class FillDiagonal(_Composite):
    """input_x with its main diagonal set to fill_value (numpy's fill_diagonal; wrap continues
    the diagonal down a tall matrix)."""

    def __init__(self, fill_value, wrap=False):
        if not isinstance(fill_value, (int, float)) or isinstance(fill_value, bool):
            raise TypeError(f"FillDiagonal: 'fill_value' must be a float, got {type(fill_value).__name__}")
        if not isinstance(wrap, bool):
            raise TypeError(f"FillDiagonal: 'wrap' must be a bool, got {type(wrap).__name__}")
        super().__init__(fill_value=float(fill_value), wrap=wrap)

    def _call(self, input_x):
        return fill_diagonal(input_x, self.fill_value, self.wrap)


class InplaceUpdateV2(_Composite):
    """x with the rows `indices` (an int, a tuple or a tensor, given at call time) replaced by v."""

    def _call(self, x, indices, v):
        return inplace_update(x, v, indices)


COMPOSITES = [n for n, v in dict(globals()).items()
              if isinstance(v, type) and issubclass(v, _Composite) and v is not _Composite]
