"""Side effects, MindSpore style: ops.assign writes a Parameter, ops.depend orders a value after
an effect. Eagerly they act at once; in graph mode the frontend maps them to the graph's assign and
depend primitives, so an optimizer's updates run inside the compiled step."""
from mycel.common.tensor import Tensor
from mycel.common.validator import not_tensor_error


def assign(variable, value):
    """Writes `value` into `variable` (a Parameter or Tensor) in place and returns `variable`.
    `value` must have the variable's shape; a Python number or array is converted to its dtype."""
    if not isinstance(variable, Tensor):
        raise not_tensor_error("assign", "variable", variable, "a Parameter or Tensor")
    if not isinstance(value, Tensor):
        value = Tensor(value, dtype=variable.dtype)
    if tuple(value.shape) != tuple(variable.shape):
        raise ValueError(f"assign: argument 'value' must have the variable's shape {tuple(variable.shape)}, "
                         f"got {tuple(value.shape)}")
    if value.dtype != variable.dtype:
        raise TypeError(f"assign: argument 'value' must have the variable's dtype {variable.dtype}, "
                        f"got {value.dtype}")
    variable._assign(value)
    return variable


def depend(value, expr):
    """Returns `value`; in graph mode it is computed after `expr` (whose effects are kept)."""
    del expr
    return value
