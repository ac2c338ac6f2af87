"""P.Argmax/P.Argmin with MindSpore's output_type (int32 or int64): the registry op gives int64
indices; another output_type is a cast of them, in both modes (graph mode parses
`_mycel_graph_function`, the registry op followed by the cast)."""
from mycel import _mycel
from mycel.common.dtype import int32, int64


def with_output_type(base):
    """A subclass of the generated primitive class `base` taking output_type."""

    class ArgWithOutputType(base):
        __signature__ = None  # inspect reads __init__ (output_type included)
        _extra_attrs = ("output_type",)  # beyond the registry's attributes

        def __init__(self, axis: int = -1, output_type=int64, keep_dims: bool = False):
            if output_type not in (int32, int64):
                raise TypeError(f"{base.__name__}: output_type must be mycel.int32 or mycel.int64, "
                                f"got {output_type!r}")
            super().__init__(axis=axis, keep_dims=keep_dims)
            self.output_type = output_type
            self.add_prim_attr("output_type", output_type)

        def __call__(self, x):
            return self._graph_call(x)

        def _graph_call(self, x):
            indices = self._bound(x)
            if self.output_type == int64:
                return indices
            return _mycel.ops.cast(indices, self.output_type)

        @property
        def _mycel_graph_function(self):
            return self._graph_call

    ArgWithOutputType.__name__ = ArgWithOutputType.__qualname__ = base.__name__
    ArgWithOutputType.__module__ = "mycel.ops.operations"
    ArgWithOutputType.__doc__ = base.__doc__
    return ArgWithOutputType
