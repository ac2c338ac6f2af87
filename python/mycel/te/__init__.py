"""Tensor expressions (issue 18): a DSL for custom operators with operator-level autodiff.

The core (expression IR, differentiate, lowering, C++ code generation and the on-disk kernel
cache) is C++ in src/mycel/te; this package only builds expressions and calls in.
"""
from mycel.te.expr import (Expr, TensorExpr, IterVar, SizeVar, var, placeholder, compute, reduce_axis, sum,
                           max, min, if_then_else, cast, const, all_of, any_of, exp, log, sqrt,
                           rsqrt, tanh, sigmoid, abs, sin, cos, erf, power)
from mycel.te.vector import (vmuls, vadds, vexp, vlog, vrec, vmul, vadd, vsub, vdiv, vmax, vmin,
                             vabs, vrelu, vsqrt, vtanh, reduce_sum, reduce_max, reduce_min)
from mycel.te.build import build, differentiate, lower
from mycel.te.schedule import create_schedule, Schedule, Stage
from mycel.te import expr as _expr

_reducers = {"sum": reduce_sum, "max": reduce_max, "min": reduce_min}


def _tensor_or_expr(kind):
    scalar = getattr(_expr, kind)

    def f(x, axis=None, keepdims=False):
        if isinstance(x, TensorExpr):  # whole-tensor form: te.sum(x, axis)
            return _reducers[kind](x, axis, keepdims)
        return scalar(x, axis)
    f.__name__ = kind
    f.__doc__ = f"te.{kind}(expr, reduce_axes) inside compute, or te.{kind}(tensor, axis)."
    return f


sum = _tensor_or_expr("sum")  # noqa: A001
max = _tensor_or_expr("max")  # noqa: A001
min = _tensor_or_expr("min")  # noqa: A001

__all__ = ["Expr", "TensorExpr", "IterVar", "SizeVar", "var", "placeholder", "compute", "reduce_axis", "sum", "max",
           "min", "if_then_else", "cast", "const", "all_of", "any_of", "exp", "log", "sqrt",
           "rsqrt", "tanh", "sigmoid", "abs", "sin", "cos", "erf", "power", "vmuls", "vadds", "vexp",
           "vlog", "vrec", "vmul", "vadd", "vsub", "vdiv", "vmax", "vmin", "vabs", "vrelu",
           "vsqrt", "vtanh", "reduce_sum", "reduce_max", "reduce_min", "build", "differentiate",
           "lower", "create_schedule", "Schedule", "Stage"]
