"""mindspore.ops.function.math_func: mycel.ops's functions (see mycel.ops.function); `F` is the
functional module, as MindSpore's math_func imports it."""
from mycel.ops import functional as F  # noqa: F401
from mycel.ops.function._view import view_getattr

__getattr__ = view_getattr
