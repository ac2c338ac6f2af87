"""mindspore.ops.function.reshard_func: mycel.ops's functions (see mycel.ops.function)."""
from mycel.ops.function._view import view_getattr

__getattr__ = view_getattr
