"""P.Argmax/P.Argmin with MindSpore's output_type (int32 or int64): the registry op gives int64
indices; another output_type is a cast of them, in both modes (graph mode parses
`_mycel_graph_function`, the registry op followed by the cast). P.Pad with MindSpore's paddings,
one (before, after) pair per dimension (the registry op takes them flat)."""
import inspect

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


def with_paired_paddings(base):
    """A subclass of the generated Pad taking MindSpore's paddings, ((before, after), ...) in
    dimension order; the registry attribute is the same numbers flat (a flat tuple is kept)."""

    class PadWithPairs(base):
        # the generated class's signature (paddings, mode, value): pairs are another spelling of
        # the same attribute, and mode/value stay Mycel's extension

        def __init__(self, paddings, mode="constant", value=0.0):
            if not isinstance(paddings, (tuple, list)):
                raise TypeError(f"Pad: paddings must be a tuple of (before, after) pairs, got {paddings!r}")
            flat = []
            for p in paddings:
                if isinstance(p, (tuple, list)):
                    if len(p) != 2:
                        raise ValueError(f"Pad: each paddings entry must be a (before, after) pair, got {p!r}")
                    flat.extend(p)
                else:
                    flat.append(p)
            super().__init__(paddings=tuple(flat), mode=mode, value=value)
            self.paddings = paddings

    PadWithPairs.__name__ = PadWithPairs.__qualname__ = base.__name__
    PadWithPairs.__module__ = "mycel.ops.operations"
    PadWithPairs.__doc__ = base.__doc__
    return PadWithPairs


def with_keep_dims_first(base):
    """A subclass of a generated Reduce* class whose positional argument is keep_dims, as
    MindSpore's `P.ReduceSum(keep_dims=False)` (the axis comes with the call: `(x, axis)`); the
    registry's attributes stay available by keyword (`ReduceSum(axis=0)`)."""

    class ReduceKeepDimsFirst(base):
        def __init__(self, keep_dims=False, **kwargs):
            if not isinstance(keep_dims, bool):
                raise TypeError(f"{base.__name__}: keep_dims must be a bool, got {keep_dims!r}")
            super().__init__(keep_dims=keep_dims, **kwargs)
            self.keep_dims = keep_dims

    # The registry's attributes, keep_dims first (MindSpore's positional argument), the rest by
    # keyword: (keep_dims: bool = False, *, axis: tuple = ()).
    params = inspect.signature(base).parameters
    ReduceKeepDimsFirst.__signature__ = inspect.Signature(
        [params["keep_dims"]] + [p.replace(kind=p.KEYWORD_ONLY) for n, p in params.items() if n != "keep_dims"])
    ReduceKeepDimsFirst._positional = ("keep_dims",)  # MindSpore's order, not the registry's
    ReduceKeepDimsFirst.__name__ = ReduceKeepDimsFirst.__qualname__ = base.__name__
    ReduceKeepDimsFirst.__module__ = "mycel.ops.operations"
    ReduceKeepDimsFirst.__doc__ = base.__doc__
    return ReduceKeepDimsFirst
