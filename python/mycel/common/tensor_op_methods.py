"""Tensor methods that forward to registry ops (x.sum(axis), x.exp(), x.matmul(w), ...), as
MindSpore's and PyTorch's Tensor offer. Methods for ops that are not registered are skipped."""
from mycel import _mycel

# The class itself, not mycel.common.tensor (which imports this module to install the methods):
# no import cycle.
Tensor = _mycel.Tensor

# method name -> op name
_METHODS = {
    "abs": "abs", "neg": "neg", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "square": "square", "reciprocal": "reciprocal",
    "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "sigmoid": "sigmoid",
    "relu": "relu", "erf": "erf", "floor": "floor", "ceil": "ceil", "round": "round",
    "sign": "sign", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
    "logical_not": "logical_not", "add": "add", "sub": "sub", "mul": "mul",
    "pow": "pow", "maximum": "maximum", "minimum": "minimum", "matmul": "matmul",
    "sum": "sum", "mean": "mean", "max": "max", "min": "min", "amax": "max", "amin": "min",
    "prod": "prod", "all": "all", "any": "any", "argmax": "argmax", "argmin": "argmin",
    "var": "var", "std": "std", "logsumexp": "logsumexp", "cumsum": "cumsum",
    "clip": "clip_by_value", "softmax": "softmax", "log_softmax": "log_softmax",
    "sort": "sort", "argsort": "argsort", "topk": "top_k", "tril": "tril", "triu": "triu",
    # MindSpore's other Tensor method names of registry ops
    "absolute": "abs", "negative": "neg", "multiply": "mul", "subtract": "sub",
    "true_divide": "div", "floor_divide": "floor_div", "remainder": "mod", "clamp": "clip_by_value",
    "eq": "equal", "equal": "equal", "ne": "not_equal", "not_equal": "not_equal", "gt": "greater",
    "greater": "greater", "ge": "greater_equal", "greater_equal": "greater_equal", "lt": "less",
    "less": "less", "le": "less_equal", "less_equal": "less_equal", "logical_and": "logical_and",
    "logical_or": "logical_or", "logical_xor": "logical_xor", "atan2": "atan2", "arctan2": "atan2",
    "gather": "gather", "unsqueeze": "expand_dims",  # gather_elements: tensor_composites.py
    "scatter_add": "scatter_add", "one_hot": "one_hot", "silu": "silu", "gelu": "gelu",
    "real": "real", "imag": "imag", "conj": "conj", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "bitwise_left_shift": "bitwise_left_shift", "bitwise_right_shift": "bitwise_right_shift",
}  # div/divide take rounding_mode: ops/tensor_composites.py


def _forward(op):
    def method(self, *args, **kwargs):
        return op(self, *args, **kwargs)
    method.__doc__ = op.__doc__
    return method


for _method, _op_name in _METHODS.items():
    _op = getattr(_mycel.ops, _op_name, None)
    if _op is not None and not hasattr(Tensor, _method):
        setattr(Tensor, _method, _forward(_op))

