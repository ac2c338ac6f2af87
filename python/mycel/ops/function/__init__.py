"""mindspore.ops.function: MindSpore's functional API as a package of topic modules
(`array_func`, `math_func`, `nn_func`, `random_func`, ...). Every name is mycel.ops's function of
that name, so `from mindspore.ops.function import x` and `from mindspore.ops.function.math_func
import x` give what `ops.x` gives; the modules are views, not copies. `csr_softmax` MindSpore
keeps only under this path."""
from mycel.ops.function._view import view_getattr
from mycel.ops.operations.sparse_ops import csr_softmax  # noqa: F401

__getattr__ = view_getattr
