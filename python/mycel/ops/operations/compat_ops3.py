"""MindSpore's primitive classes for issue 14's ops that the registry does not generate (their
calling convention differs from the registry op's, or they are compositions): Rint, the scatter
reductions on Parameters, the reshuffles and the small math primitives."""
from mycel import _mycel
from mycel.ops.operations.compat_ops import _Composite

_ops = _mycel.ops


class Rint(_Composite):
    """x rounded to the nearest integer, ties to even (numpy's rint)."""

    def _call(self, x):
        return _ops.round(x)


COMPOSITES = ["Rint"]
