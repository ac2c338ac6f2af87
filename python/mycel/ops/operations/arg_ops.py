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
    return _with_bool_first(base, "keep_dims", False)


def with_sorted_first(base):
    """TopK as MindSpore's `P.TopK(sorted=True)`, k given with the call: `(x, k)`."""
    return _with_bool_first(base, "sorted", True)


def _with_bool_first(base, name, default):
    """A subclass of a generated class whose one positional argument is the bool attribute
    `name` (MindSpore's order, not the registry's); the other attributes stay keywords."""

    class BoolFirst(base):
        def __init__(self, *args, **kwargs):
            if len(args) > 1:
                raise TypeError(f"{base.__name__}() takes one positional argument ({name}), got {len(args)}")
            value = args[0] if args else kwargs.pop(name, default)
            if not isinstance(value, bool):
                raise TypeError(f"{base.__name__}: {name} must be a bool, got {value!r}")
            super().__init__(**{name: value}, **kwargs)
            setattr(self, name, value)

    # The registry's attributes, `name` first, the rest by keyword: (keep_dims: bool = False, *,
    # axis: tuple = ()).
    params = inspect.signature(base).parameters
    BoolFirst.__signature__ = inspect.Signature(
        [params[name]] + [p.replace(kind=p.KEYWORD_ONLY) for n, p in params.items() if n != name])
    BoolFirst._positional = (name,)
    BoolFirst.__name__ = BoolFirst.__qualname__ = base.__name__
    BoolFirst.__module__ = "mycel.ops.operations"
    BoolFirst.__doc__ = base.__doc__
    return BoolFirst


def with_conv_signature(base):
    """Conv2D/Conv3D as MindSpore constructs them: `P.Conv2D(out_channel, kernel_size, mode=1,
    pad_mode="valid", pad=0, stride=1, dilation=1, group=1, data_format="NCHW")`. out_channel and
    kernel_size describe w, which the call passes (they are kept as attributes, as MindSpore
    keeps them); mode 1 is the only convolution MindSpore's CPU has. The registry's own keywords
    (`groups`, `strides`, ...) still work."""

    class ConvMindSporeOrder(base):
        def __init__(self, out_channel=None, kernel_size=None, mode=1, pad_mode="valid", pad=0, stride=1,
                     dilation=1, group=1, data_format=None, **kwargs):
            who = base.__name__
            if mode != 1:
                raise ValueError(f"{who}: mode must be 1 (cross-correlation), got {mode!r}")
            if data_format not in (None, "NCHW", "NCDHW"):
                raise ValueError(f"{who}: data_format must be NCHW (NCDHW for Conv3D), got {data_format!r}")
            attrs = {"pad_mode": pad_mode, "pad": pad, "stride": stride, "dilation": dilation, "groups": group}
            for alias, name in (("strides", "stride"), ("dilations", "dilation"), ("padding", "pad")):
                if alias in kwargs:
                    attrs[name] = kwargs.pop(alias)
            attrs.update(kwargs)
            super().__init__(**attrs)
            self.out_channel, self.kernel_size, self.mode = out_channel, kernel_size, mode

    ConvMindSporeOrder.__name__ = ConvMindSporeOrder.__qualname__ = base.__name__
    ConvMindSporeOrder.__module__ = "mycel.ops.operations"
    ConvMindSporeOrder.__doc__ = base.__doc__
    return ConvMindSporeOrder
