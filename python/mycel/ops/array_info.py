"""What a tensor is, MindSpore style: the functional ops.shape/rank/size/dtype and the primitive
classes P.Shape, P.Rank, P.Size, P.DType (used as `self.shape = P.Shape()` in a Cell), plus the
primitive forms of assign, depend and print. They are plain Python: in graph mode they parse like user
code (`_mycel_graph_function`), so x.shape, x.ndim, x.size and x.dtype fold to constants wherever
analysis knows them."""
from mycel import _mycel
from mycel.common.validator import not_tensor_error
from mycel.ops.effects import assign, depend


def shape(input_x):
    """The shape of input_x, a tuple of ints."""
    if not isinstance(input_x, _mycel.Tensor):
        raise not_tensor_error("shape", "input_x", input_x)
    return input_x.shape


def rank(input_x):
    """The number of dimensions of input_x."""
    if not isinstance(input_x, _mycel.Tensor):
        raise not_tensor_error("rank", "input_x", input_x)
    return input_x.ndim


def size(input_x):
    """The number of elements of input_x."""
    if not isinstance(input_x, _mycel.Tensor):
        raise not_tensor_error("size", "input_x", input_x)
    return input_x.size


def dtype(input_x):
    """The dtype of input_x."""
    if not isinstance(input_x, _mycel.Tensor):
        raise not_tensor_error("dtype", "input_x", input_x)
    return input_x.dtype


def print_(*inputs):
    """Prints each input on a line of its own (MindSpore's Print): tensors with their values,
    strings as they are. In graph mode it runs when the compiled program reaches it."""
    for item in inputs:
        print(item)


class _FunctionPrimitive:
    """A primitive class whose call is one of the functions above (stateless: no attributes)."""
    _function = None

    def __call__(self, *args):
        return type(self)._function(*args)

    @property
    def _mycel_graph_function(self):
        return type(self)._function

    def __repr__(self):
        return f"{type(self).__name__}<>"


def _primitive(name, fn):
    return type(name, (_FunctionPrimitive,), {"_function": staticmethod(fn), "__doc__": fn.__doc__,
                                              "__module__": "mycel.ops.operations"})


Shape = _primitive("Shape", shape)
Rank = _primitive("Rank", rank)
Size = _primitive("Size", size)
DType = _primitive("DType", dtype)
Assign = _primitive("Assign", assign)
Depend = _primitive("Depend", depend)
Print = _primitive("Print", print_)

__all__ = ["shape", "rank", "size", "dtype", "print_", "Shape", "Rank", "Size", "DType", "Assign",
           "Depend", "Print"]
