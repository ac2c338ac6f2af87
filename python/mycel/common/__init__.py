"""Tensor, dtypes and global settings; MindSpore's `mindspore.common` names (Parameter,
ParameterTuple, dtype, initializer, mutable, Tensor, set_seed)."""
from mycel.common import dtype  # noqa: F401
from mycel.common.tensor import Tensor  # noqa: F401
from mycel.common.parameter import Parameter, ParameterTuple  # noqa: F401
from mycel.common import initializer  # noqa: F401  (the module, as MindSpore's)
from mycel.common.seed import set_seed, get_seed  # noqa: F401
from mycel.common.mutable import mutable  # noqa: F401
