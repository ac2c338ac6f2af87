"""Primitive classes (MindSpore's `ops.operations`, usually imported as P): configure the
attributes once, then call with tensors: `P.MatMul(transpose_b=True)(x, w)`."""
from mycel import _mycel
from mycel.ops.signature import PrimitiveSignature, docstring


class Primitive:
    """Base of every primitive class; subclasses are generated from the registry."""
    _handle = None
    __signature__ = PrimitiveSignature()  # from the registry schema (signature.py)

    def __init__(self, *args, **kwargs):
        self._bound = type(self)._handle.bind(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self._bound(*args, **kwargs)

    @property
    def attrs(self):
        """The attributes fixed at construction."""
        return self._bound.preset

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"{type(self).__name__}<{items}>"


__all__ = []
for _name, _handle in _mycel.op_handles.items():
    _cls = type(_handle.class_name, (Primitive,), {
        "_handle": _handle, "__doc__": docstring(_handle, primitive=True), "__module__": __name__})
    globals()[_handle.class_name] = _cls
    __all__.append(_handle.class_name)

# Primitive forms of Python-level operations (tensor info, assign, depend, print): array_info.py.
from mycel.ops import array_info as _array_info  # noqa: E402

for _name in ("Shape", "Rank", "Size", "DType", "Assign", "Depend", "Print"):
    globals()[_name] = getattr(_array_info, _name)
    __all__.append(_name)

# Summary primitives take (name, value) as MindSpore's do, not the registry's (value, name=...):
# summary.py.
from mycel.ops import summary as _summary  # noqa: E402

for _name in _summary.__all__:
    globals()[_name] = getattr(_summary, _name)


class Broadcast(globals()["Broadcast"]):
    """MindSpore's Broadcast(root_rank, group): every rank gets root_rank's tensors. Takes a tensor
    or a tuple of tensors (MindSpore's form) and returns the same structure; graph mode parses the
    function below like user code, so a tuple becomes one broadcast op per item."""
    __module__ = __name__

    def __call__(self, input_x):
        return self._mycel_graph_function(input_x)

    @property
    def _mycel_graph_function(self):
        one = self._bound

        def broadcast(input_x):
            if isinstance(input_x, tuple) or isinstance(input_x, list):
                return tuple(one(x) for x in input_x)
            return one(input_x)
        return broadcast


# P.Matmul: "did you mean 'MatMul'?" (common/suggest.py)
from mycel.common.suggest import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("mycel.ops.operations", globals())
