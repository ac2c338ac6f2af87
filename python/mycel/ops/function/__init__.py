"""MindSpore's `mindspore.ops.function` package (its functional API, re-exported as mindspore.ops):
here the names of mycel.ops, and the functions MindSpore keeps only under this path
(csr_softmax)."""
from mycel.ops.operations.sparse_ops import csr_softmax  # noqa: F401


def __getattr__(name):
    import mycel.ops
    try:
        return getattr(mycel.ops, name)
    except AttributeError:
        raise AttributeError(f"module 'mycel.ops.function' has no attribute {name!r}") from None
