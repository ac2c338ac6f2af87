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

    def shard(self, in_strategy, out_strategy=None):
        """Semi-auto parallel: how to split each input (MindSpore's strategy: one tuple of split
        counts per tensor input, e.g. ((2, 1), (1, 2)) for a matmul on 4 devices), and optionally
        the output (a one-tuple of tuples). Read in GRAPH_MODE under
        set_auto_parallel_context(parallel_mode=SEMI_AUTO_PARALLEL); returns self."""
        self._in_strategy = _check_strategy(type(self).__name__, "in_strategy", in_strategy)
        self._out_strategy = (None if out_strategy is None else
                              _check_strategy(type(self).__name__, "out_strategy", out_strategy))
        if self._out_strategy is not None and len(self._out_strategy) != 1:
            raise ValueError(f"{type(self).__name__}.shard: out_strategy must hold one tuple (the output's), "
                             f"got {out_strategy!r}")
        return self

    @property
    def attrs(self):
        """The attributes fixed at construction."""
        return self._bound.preset

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"{type(self).__name__}<{items}>"


def _check_strategy(prim, arg, strategy):
    """A tuple of tuples of ints >= 1 (None entries: that input is left alone)."""
    ok = isinstance(strategy, (tuple, list)) and all(
        s is None or (isinstance(s, (tuple, list)) and all(
            isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in s)) for s in strategy)
    if not ok:
        raise ValueError(f"{prim}.shard: {arg} must be a tuple of tuples of ints >= 1 (one per input, "
                         f"e.g. ((2, 1), (1, 1))), got {strategy!r}")
    return tuple(None if s is None else tuple(s) for s in strategy)


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


# P.Matmul: "did you mean 'MatMul'?" (common/suggest.py)
from mycel.common.suggest import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("mycel.ops.operations", globals())
