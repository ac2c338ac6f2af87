"""MindSpore's one_hot forms over the registry op one_hot (whose on/off values are float
attributes): `ops.one_hot(indices, depth, on_value, off_value, axis)` and
`P.OneHot(axis)(indices, depth, on_value, off_value)` with on_value/off_value as Tensors give
on_value's dtype (the wider unsigned and complex types too) and work in graph mode, where a
Tensor is a run-time value: hot * on + (1 - hot) * off over the 0/1 one-hot of that dtype."""
from mycel import _mycel
from mycel.common import dtype as mstype
from mycel.ops.operations import OneHot as _Generated  # the registry's class (operations/)

_ops = _mycel.ops


def one_hot(indices, depth, on_value=1.0, off_value=0.0, axis=-1, dtype=mstype.float32):
    """One-hot of integer indices along a new `axis`: on_value where index == position, else
    off_value. Tensor values set the output dtype (on_value's); numbers use `dtype`."""
    on_t = isinstance(on_value, _mycel.Tensor)
    off_t = isinstance(off_value, _mycel.Tensor)
    if not on_t and not off_t:
        return _ops.one_hot(indices, depth=depth, on_value=on_value, off_value=off_value, axis=axis,
                            dtype=dtype)
    dt = on_value.dtype if on_t else off_value.dtype
    hot = _ops.one_hot(indices, depth=depth, on_value=1.0, off_value=0.0, axis=axis, dtype=dt)
    on = _ops.cast(on_value if on_t else _mycel.Tensor(on_value), dt)
    off = _ops.cast(off_value if off_t else _mycel.Tensor(off_value), dt)
    # Exact for 0/1 weights (1 * on + 0 * off), whatever on and off are (unsigned too).
    return hot * on + (_ops.ones_like(hot) - hot) * off


class OneHot(_Generated):
    """MindSpore's P.OneHot(axis=-1)(indices, depth, on_value, off_value), Tensor values
    included (they set the dtype); the registry's form (depth, on_value, off_value given at
    construction, called with the indices) as before."""

    def __call__(self, indices, *args, **kwargs):
        values = args + tuple(kwargs.values())
        if any(isinstance(v, _mycel.Tensor) for v in values):
            return one_hot(indices, *args, axis=self.attrs.get("axis", -1), **kwargs)
        return super().__call__(indices, *args, **kwargs)

    @property
    def _mycel_graph_function(self):
        bound = self._bound
        if "depth" in bound.preset:  # the registry's form: everything fixed at construction
            def one_hot_registry_form(indices):
                return bound(indices)
            return one_hot_registry_form
        axis = self.attrs.get("axis", -1)

        def one_hot_prim(indices, depth, on_value, off_value):
            return one_hot(indices, depth, on_value, off_value, axis)
        return one_hot_prim


def _append_example():
    """The op table's runnable example (ops/_examples.py) in one_hot's help text, as the
    generated functions carry theirs (tests/python/test_op_examples.py runs it)."""
    from mycel.ops._examples import EXAMPLES
    if "one_hot" in EXAMPLES:
        one_hot.__doc__ += "\n\nExample:\n" + "\n".join(
            "    " + line for line in EXAMPLES["one_hot"].splitlines()) + "\n"


_append_example()
