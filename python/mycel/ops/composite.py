"""MindSpore functional ops made of registry ops (masked_fill, chunk, linspace). Plain Python, so
graph mode parses them like user code and their gradients come from the ops they call."""
from mycel import _mycel
from mycel.common.dtype import float32
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops


def masked_fill(input_x, mask, value):
    """input_x with `value` where the bool `mask` (broadcast to it) is True."""
    if not isinstance(input_x, _mycel.Tensor):
        raise not_tensor_error("masked_fill", "input_x", input_x)
    if not isinstance(mask, _mycel.Tensor):
        raise not_tensor_error("masked_fill", "mask", mask)
    return _ops.select(mask, _ops.cast(_ops.zeros_like(input_x), input_x.dtype) + value, input_x)


def chunk(input, chunks, axis=0):  # noqa: A002 (MindSpore's argument name)
    """Splits input along `axis` into `chunks` pieces of ceil(n / chunks) (the last smaller), as
    MindSpore and PyTorch do: fewer pieces when n does not need them all."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("chunk", "input", input)
    n = input.shape[axis]
    size = (n + chunks - 1) // chunks
    sizes = ()
    for _ in range(n // size):
        sizes = sizes + (size,)
    if n % size:
        sizes = sizes + (n % size,)
    pieces = _ops.split(input, axis=axis, size_splits=sizes)
    return pieces if isinstance(pieces, tuple) else (pieces,)  # one piece: still a tuple


def linspace(start, end, steps):
    """`steps` evenly spaced float32 values from start to end, both included (numpy.linspace)."""
    if steps == 1:
        return _ops.fill(float32, (1,), start)
    step = (end - start) / (steps - 1)
    values = _ops.arange(0, steps, 1, dtype=float32) * step + start
    # numpy places the last value exactly at end.
    return _ops.concat((values[:steps - 1], _ops.fill(float32, (1,), end)), axis=0)


# MindSpore's ops.composite (imported as C): gradients and the higher-order helpers.
from mycel.common.autodiff import GradOperation, grad, value_and_grad  # noqa: E402,F401
from mycel.ops.multitype import MultitypeFuncGraph, HyperMap, Map  # noqa: E402,F401


def __getattr__(name):
    # C.zeros_like, C.ones_like, ...: MindSpore's composite module also offers the functional ops.
    import mycel.ops
    return getattr(mycel.ops, name)
