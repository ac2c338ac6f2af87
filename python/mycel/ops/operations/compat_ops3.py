"""MindSpore's primitive classes for issue 14's ops that the registry does not generate (their
calling convention differs from the registry op's, or they are compositions): Rint, the scatter
reductions on Parameters, the reshuffles and the small math primitives."""
from mycel import _mycel
from mycel.ops.function_more import reductions as _reductions
from mycel.ops.function_more import scatter_more as _scatter_more
from mycel.ops.operations.compat_ops import _Composite

_ops = _mycel.ops


class Rint(_Composite):
    """x rounded to the nearest integer, ties to even (numpy's rint)."""

    def _call(self, x):
        return _ops.round(x)


COMPOSITES = ["Rint"]


class _Locking(_Composite):
    """A scatter primitive with MindSpore's use_locking attribute, called (input_x, indices,
    updates): `_fn` names the function of ops/function_more/scatter_more.py it runs."""
    _fn = None

    def __init__(self, use_locking=False):
        if not isinstance(use_locking, bool):
            raise TypeError(f"{type(self).__name__}: use_locking must be a bool, got {use_locking!r}")
        super().__init__(use_locking=use_locking)

    def _call(self, input_x, indices, updates):
        return self._fn(input_x, indices, updates)


def _scatter_primitives():
    table = {"ScatterSub": "scatter_sub", "ScatterMul": "scatter_mul", "ScatterDiv": "scatter_div",
             "ScatterMax": "scatter_max", "ScatterMin": "scatter_min",
             "ScatterNdAdd": "scatter_nd_add", "ScatterNdSub": "scatter_nd_sub",
             "ScatterNdMul": "scatter_nd_mul", "ScatterNdDiv": "scatter_nd_div",
             "ScatterNdMax": "scatter_nd_max", "ScatterNdMin": "scatter_nd_min"}
    return {n: type(n, (_Locking,), {"_fn": staticmethod(getattr(_scatter_more, f)), "__doc__": f"ops.{f} as a primitive (a Parameter "
                                     "input_x is updated in place)."}) for n, f in table.items()}


globals().update(_scatter_primitives())


class ScatterNonAliasingAdd(_Composite):
    """input_x[indices] += updates (N-d index rows), written into the Parameter input_x."""

    def _call(self, input_x, indices, updates):
        from mycel.ops.function_more import scatter_more as _s
        return _s.scatter_nd_add(input_x, indices, updates)


class _Segment(_Composite):
    """ops.<_fn>(x, segment_ids, num_segments) as a primitive."""
    _fn = None

    def _call(self, x, segment_ids, num_segments):
        return self._fn(x, segment_ids, num_segments)


UnsortedSegmentMax = type("UnsortedSegmentMax", (_Segment,), {"_fn": staticmethod(_reductions.unsorted_segment_max)})
UnsortedSegmentMin = type("UnsortedSegmentMin", (_Segment,), {"_fn": staticmethod(_reductions.unsorted_segment_min)})
UnsortedSegmentProd = type("UnsortedSegmentProd", (_Segment,), {"_fn": staticmethod(_reductions.unsorted_segment_prod)})

COMPOSITES += ["ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMax", "ScatterMin", "ScatterNdAdd",
               "ScatterNdSub", "ScatterNdMul", "ScatterNdDiv", "ScatterNdMax", "ScatterNdMin",
               "ScatterNonAliasingAdd", "UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"]
