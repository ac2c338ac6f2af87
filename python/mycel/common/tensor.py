"""Tensor: the C++ class from _mycel, with Python operators, indexing and printing added here."""
import numpy as np

from mycel import _mycel

Tensor = _mycel.Tensor
_ops = _mycel.ops


def from_dlpack(obj):
    """A Tensor sharing the memory of a DLPack-capable object (numpy, torch, ...)."""
    return _mycel.tensor_from_dlpack(obj)


def _repr(self):
    body = np.array2string(self.asnumpy(), separator=", ", prefix="Tensor(")
    return f"Tensor({body}, dtype={self.dtype!r})" if self.ndim else \
        f"Tensor({self.asnumpy().item()!r}, dtype={self.dtype!r})"


def _str(self):
    return str(self.asnumpy())


def _array(self, dtype=None, copy=None):
    a = self.asnumpy()
    if dtype is not None:
        a = a.astype(dtype, copy=False)
    return np.array(a, copy=True) if copy else a


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    return self._dlpack_array()  # a "dltensor" capsule sharing our storage


def _item(self):
    if self.size != 1:
        raise ValueError(f"item(): only a tensor with one element can be converted to a Python scalar, got shape {self.shape}")
    return self.asnumpy().reshape(()).item()


def _binary(op, reverse=False):
    if reverse:
        return lambda self, other: op(other, self)
    return lambda self, other: op(self, other)


def _index(self):
    """A one-element integer or bool Tensor as a Python int (MindSpore's Tensor.__index__), so it
    can bound a slice: x[start:start + n] with Tensor start and n."""
    if self.dtype.name not in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                               "uint32", "uint64") or self.size != 1:
        raise TypeError(f"only integer tensors of a single element can be converted to an index, "
                        f"got a {self.dtype.name} tensor of shape {tuple(self.shape)}")
    return int(_item(self))


def _install():
    t = Tensor
    t.__repr__ = _repr
    t.__str__ = _str
    t.__array__ = _array
    t.__dlpack__ = _dlpack
    t.item = _item
    t.tolist = lambda self: self.asnumpy().tolist()
    t.__bool__ = lambda self: bool(_item(self))
    t.__float__ = lambda self: float(_item(self))
    t.__int__ = lambda self: int(_item(self))
    t.__index__ = _index
    t.__hash__ = object.__hash__
    # Arithmetic and comparison operators dispatch to the registry like any op.
    table = {
        "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_div",
        "mod": "mod", "pow": "pow", "matmul": "matmul",
    }
    for dunder, name in table.items():
        op = getattr(_ops, name, None)
        if op is None:
            continue
        setattr(t, f"__{dunder}__", _binary(op))
        setattr(t, f"__r{dunder}__", _binary(op, reverse=True))
    for dunder, name in {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                         "gt": "greater", "ge": "greater_equal",
                         # bitwise on integers, logical on bools (MindSpore's Tensor operators)
                         "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}.items():
        op = getattr(_ops, name, None)
        if op is not None:
            setattr(t, f"__{dunder}__", _binary(op))
            if name.startswith("bitwise"):  # 1 & x: the same op, operands in order
                setattr(t, f"__r{dunder}__", _binary(op, reverse=True))
    for dunder, name in {"neg": "neg", "abs": "abs", "invert": "invert"}.items():
        op = getattr(_ops, name, None)
        if op is not None:
            setattr(t, f"__{dunder}__", lambda self, _op=op: _op(self))
    t.__pos__ = lambda self: self


_install()

from mycel.common import tensor_methods  # noqa: E402,F401  (indexing and shape methods)
from mycel.common import tensor_op_methods  # noqa: E402,F401  (x.sum(), x.exp(), ...)
from mycel.common import tensor_state  # noqa: E402,F401  (assign_value, init_data, ...)
