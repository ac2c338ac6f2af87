"""Primitive classes (MindSpore's `ops.operations`, usually imported as P): configure the
attributes once, then call with tensors: `P.MatMul(transpose_b=True)(x, w)`."""
from mycel import _mycel
from mycel.ops.signature import PrimitiveSignature, docstring


class Primitive:
    """Base of every primitive class; subclasses are generated from the registry. A user's
    subclass (MindSpore's `Primitive(name)`, `PrimitiveWithInfer`) has no registry handle: its
    name, attributes and io names are kept, and calling it is the user's `__call__`, or, with no
    Python implementation, the kernel registered under its name (by_name.py), in both modes."""
    _handle = None
    __signature__ = PrimitiveSignature()  # from the registry schema (signature.py)

    def __init__(self, *args, **kwargs):
        handle = type(self)._handle
        if handle is None:  # a user's primitive: Primitive(name) as in MindSpore
            self._bound = None
            self.name = args[0] if args else kwargs.get("name", type(self).__name__)
            self._user_attrs = {}
            return
        self._bound = handle.bind(*args, **kwargs)
        self.name = handle.class_name

    def __call__(self, *args, **kwargs):
        if self._bound is None:
            return self._kernel_by_name()(*args, **kwargs)
        return self._bound(*args, **kwargs)

    def _kernel_by_name(self):
        """The registry primitive named self.name with this one's attributes (built once per
        attribute set); NotImplementedError naming the primitive when none has that name."""
        attrs = self.attrs
        cached = self.__dict__.get("_mycel_by_name")
        if cached is None or cached[0] != attrs:
            from mycel.ops.operations.by_name import kernel_of
            cached = self.__dict__["_mycel_by_name"] = (attrs, kernel_of(self))
        return cached[1]

    @property
    def _mycel_graph_impl(self):
        """What graph mode compiles for a call of a user's primitive with no Python
        implementation: the kernel registered under its name (AttributeError otherwise, so the
        call is left to the user's code)."""
        from mycel.ops.operations.by_name import has_python_impl
        if self._bound is not None or has_python_impl(self):
            raise AttributeError("_mycel_graph_impl")
        try:
            return self._kernel_by_name()
        except NotImplementedError as e:
            raise AttributeError(str(e)) from e

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
        """The attributes fixed at construction (and those added by add_prim_attr)."""
        if self._bound is None:
            return dict(self._user_attrs)
        return dict(self._bound.preset, **getattr(self, "_user_attrs", {}))

    def add_prim_attr(self, name, value):
        """Records an attribute (MindSpore's add_prim_attr); a registry op's own attributes are
        fixed at construction, so this cannot change how it computes."""
        if not hasattr(self, "_user_attrs"):
            self._user_attrs = {}
        if self._bound is not None and name in self._bound.preset and self._bound.preset[name] != value:
            raise ValueError(f"{self.name}.add_prim_attr: attribute '{name}' is set at construction "
                             f"({self._bound.preset[name]!r}); build a new {self.name}({name}={value!r})")
        self._user_attrs[name] = value
        return self

    def del_prim_attr(self, name):
        """Removes an attribute added by add_prim_attr."""
        getattr(self, "_user_attrs", {}).pop(name, None)
        return self

    def init_prim_io_names(self, inputs, outputs):
        """Records the input and output names (MindSpore's init_prim_io_names)."""
        self.add_prim_attr("input_names", list(inputs))
        self.add_prim_attr("output_names", list(outputs))

    def set_device(self, device_target):
        """MindSpore's per-primitive placement; Mycel runs every op on the CPU, so "CPU" is
        recorded (attribute primitive_target) and another target is a ValueError."""
        if device_target not in ("CPU", "cpu"):
            raise ValueError(f"{self.name}.set_device: Mycel runs on the CPU only, got {device_target!r}")
        return self.add_prim_attr("primitive_target", "CPU")

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
# Each registry op's generated class by class name, as generated: where MindSpore's primitive of
# that name differs (P.ScatterAdd updates its Parameter in place, P.Pad takes pairs), P holds
# MindSpore's and this keeps the registry op's own (the op tables test the registry op).
_REGISTRY_CLASSES = {}
for _name, _handle in _mycel.op_handles.items():
    _cls = type(_handle.class_name, (Primitive,), {
        "_handle": _handle, "__doc__": docstring(_handle, primitive=True), "__module__": __name__})
    globals()[_handle.class_name] = _REGISTRY_CLASSES[_handle.class_name] = _cls
    __all__.append(_handle.class_name)

# Argmax/Argmin take MindSpore's output_type: arg_ops.py.
from mycel.ops.operations.arg_ops import with_output_type as _with_output_type  # noqa: E402

Argmax = _with_output_type(Argmax)  # noqa: F821 (generated above)
Argmin = _with_output_type(Argmin)  # noqa: F821
# Pad takes MindSpore's ((before, after), ...) per dimension: arg_ops.py.
from mycel.ops.operations.arg_ops import with_paired_paddings as _with_paired_paddings  # noqa: E402

Pad = _with_paired_paddings(Pad)  # noqa: F821
# The reductions take keep_dims positionally (`P.ReduceMean(False)(x, axis)`): arg_ops.py.
from mycel.ops.operations.arg_ops import with_keep_dims_first as _with_keep_dims_first  # noqa: E402

for _name in ("ReduceSum", "ReduceMean", "ReduceProd", "ReduceAll", "ReduceAny", "ReduceMax", "ReduceMin"):
    globals()[_name] = _with_keep_dims_first(globals()[_name])
# TopK takes sorted positionally and k with the call (`P.TopK(True)(x, k)`): arg_ops.py.
from mycel.ops.operations.arg_ops import with_sorted_first as _with_sorted_first  # noqa: E402

TopK = _with_sorted_first(TopK)  # noqa: F821 (generated above)
# Conv2D/Conv3D take MindSpore's (out_channel, kernel_size, mode, pad_mode, ...): arg_ops.py.
from mycel.ops.operations.arg_ops import with_conv_signature as _with_conv_signature  # noqa: E402

Conv2D = _with_conv_signature(Conv2D)  # noqa: F821 (generated above)
Conv3D = _with_conv_signature(Conv3D)  # noqa: F821

# MindSpore primitives made of registry ops (ops/extra.py), and Inv, MindSpore's Reciprocal.
from mycel.ops import extra as _extra  # noqa: E402

for _name in _extra.PRIMITIVES:
    globals()[_name] = getattr(_extra, _name)
    __all__.append(_name)
Inv = Reciprocal  # noqa: F821 (generated above)
__all__.append("Inv")

# MindSpore's other names of generated classes, and small composites: compat_ops.py.
from mycel.ops.operations import compat_ops as _compat  # noqa: E402

for _name, _cls in _compat.aliases(globals()).items():
    globals()[_name] = _cls
    __all__.append(_name)
for _name in _compat.COMPOSITES:
    globals()[_name] = getattr(_compat, _name)
    __all__.append(_name)


def _adopt(module):
    """Adds each name of module.COMPOSITES that P does not have yet (a name generated from the
    registry, or taken from an earlier module, stays)."""
    for name in module.COMPOSITES:
        if name not in globals():
            globals()[name] = getattr(module, name)
            __all__.append(name)


# The primitive classes over functional composites, module by module:
#   compat_ops2: more primitive classes over the functional composites;
#   compat_ops3: issue 14's primitives (Rint, the scatter reductions, the reshuffles);
#   compat_ops4: pooling with argmax, channel dropout, transposed/depthwise convolution, CTC
#                greedy decoding;
#   rnn_ops: MindSpore's LSTM primitive over one flat weight tensor;
#   vision_ops: the box and region primitives (IOU, ROIAlign, NMSWithMask, ...);
#   optim_ops, optim_ops2, optim_ops3: the optimizer primitives (ApplyMomentum, Adam, the sparse
#                and Adagrad-DA ones, ApplyAdamWithAmsgrad, FusedAdaFactor, ...);
#   compat_ops5: checks, small array ops, RandomChoiceWithMask, ComputeAccidentalHits;
#   compat_ops6: random_ops.Uniform, image_ops.RGBToHSV, ConjugateTranspose;
#   ctc_ops: MindSpore's CTCLoss primitive (sparse labels, loss and gradient);
#   pad_ops: PadV3;
#   primitive_forms: CeLU, SearchSorted, FillDiagonal, InplaceUpdateV2.
from mycel.ops.operations import compat_ops2 as _compat2  # noqa: E402
from mycel.ops.operations import compat_ops3 as _compat3  # noqa: E402
from mycel.ops.operations import compat_ops4 as _compat4  # noqa: E402
from mycel.ops.operations import compat_ops5 as _compat5  # noqa: E402
from mycel.ops.operations import compat_ops6 as _compat6  # noqa: E402
from mycel.ops.operations import ctc_ops as _ctc_ops  # noqa: E402
from mycel.ops.operations import optim_ops as _optim_ops  # noqa: E402
from mycel.ops.operations import optim_ops2 as _optim_ops2  # noqa: E402
from mycel.ops.operations import optim_ops3 as _optim_ops3  # noqa: E402
from mycel.ops.operations import pad_ops as _pad_ops  # noqa: E402
from mycel.ops.operations import primitive_forms as _primitive_forms  # noqa: E402
from mycel.ops.operations import rnn_ops as _rnn_ops  # noqa: E402
from mycel.ops.operations import vision_ops as _vision_ops  # noqa: E402

for _module in (_compat2, _compat3, _compat4, _rnn_ops, _vision_ops, _optim_ops, _compat5,
                _compat6, _ctc_ops, _optim_ops2, _optim_ops3, _pad_ops, _primitive_forms):
    _adopt(_module)

# Where MindSpore's primitive differs from the generated registry class of the same name:
# ScatterAdd updates its Parameter in place and takes use_locking (the registry op returns a new
# tensor); RandomCategorical takes dtype at construction, num_sample and seed per call; Dense
# takes a 1-d w and every numeric dtype (the registry op: floats, 2-d w).
ScatterAdd = _compat3.ScatterAdd
RandomCategorical = _compat5.RandomCategorical
Dense = _compat5.Dense

# PSROIPooling and DeformableOffsets, which MindSpore names in nn_ops: _grad_ops.py (with their
# gradients).
from mycel.ops.operations import _grad_ops as _grad_ops_mod  # noqa: E402

PSROIPooling = _grad_ops_mod.PSROIPooling
DeformableOffsets = _grad_ops_mod.DeformableOffsets
__all__ += ["PSROIPooling", "DeformableOffsets"]

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

# TruncatedNormal is called with the shape, as MindSpore's is: random_more.py.
from mycel.ops.random_more import TruncatedNormal  # noqa: E402,F811
# OneHot takes Tensor on/off values (their dtype): one_hot.py.
from mycel.ops.one_hot import OneHot  # noqa: E402,F811
# So are RandomGamma, RandomPoisson, StandardLaplace, ParameterizedTruncatedNormal and
# NonDeterministicInts; the candidate samplers bind the registry's candidate_sampler.
from mycel.ops import random_primitives as _random_primitives  # noqa: E402

for _name in _random_primitives.__all__:
    globals()[_name] = getattr(_random_primitives, _name)
    if _name not in __all__:
        __all__.append(_name)


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

# MindSpore's submodule paths P.random_ops, P.sparse_ops.
from mycel.ops.operations import random_ops, sparse_ops  # noqa: E402,F401

# MindSpore's P.SparseToDense and P.SparseTensorDenseMatmul (ops/sparse.py), here as in MindSpore.
for _name in ("SparseToDense", "SparseTensorDenseMatmul"):
    if _name not in globals():
        globals()[_name] = getattr(sparse_ops, _name)
        __all__.append(_name)
