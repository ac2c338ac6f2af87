"""Helpers of the gradient primitives (_grad_ops.py, grad_ops_pool.py): the vjp of a forward
primitive, and argument checks that name the primitive."""
from mycel.common.autodiff import GradOperation
from mycel.ops.primitive import constexpr

VJP = GradOperation(sens_param=True)  # grad of the first input, given the output sensitivity


@constexpr
def check_same_shape(who, a_name, a, b_name, b):
    """Shapes (a dim unknown until run time is None or -1, and matches any)."""
    a = a.shape if hasattr(a, "shape") else a
    b = b.shape if hasattr(b, "shape") else b
    same = len(a) == len(b) and all(p is None or q is None or p < 0 or q < 0 or p == q for p, q in zip(a, b))
    if not same:
        raise ValueError(f"{who}: {a_name} and {b_name} must have the same shape, got "
                         f"{tuple(a)} and {tuple(b)}")


def check_float(who, name, value):
    """value as a float; a bool or non-number is a TypeError naming the primitive."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{who}: {name} must be a float, got {value!r}")
    return float(value)


class ShapeError(ValueError, RuntimeError):
    """A shape mismatch MindSpore reports at kernel launch (RuntimeError); a ValueError here."""


def positive_int(who, name, value):
    """An int > 0 (TypeError for a non-int, ValueError below 1)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{who}: {name} must be an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{who}: {name} must be > 0, got {value}")
    return value


def positive_float(who, name, value):
    """A float > 0."""
    value = check_float(who, name, value)
    if value <= 0:
        raise ValueError(f"{who}: {name} must be > 0, got {value}")
    return value
