"""MindSpore's kernel-registration vocabulary (mindspore.ops.op_info_register): the builders
CustomRegOp, AiCPURegOp and TBERegOp, the DataType (dtype, format) pairs, and the decorators
op_info_register and custom_info_register. MindSpore hands this information to its device
kernel selection; Mycel's Custom operators take their dtypes from the inputs, so the builders
check and record what they are told (get_op_info() gives it back as a dict) and the decorators
keep the function as it is, letting programs written against MindSpore's API import and run."""
# (dtype name prefix, dtype) and (format suffix, format) of DataType's constants.
_DTYPES = {"None": "", "BOOL": "bool", "I8": "int8", "U8": "uint8", "I16": "int16", "U16": "uint16",
           "I32": "int32", "U32": "uint32", "I64": "int64", "U64": "uint64", "F16": "float16",
           "F32": "float32", "F64": "float64", "BF16": "bfloat16", "C64": "complex64", "C128": "complex128"}
_FORMATS = {"None": "", "Default": "DefaultFormat", "5HD": "NC1HWC0", "FracZ": "FRACTAL_Z",
            "FracNZ": "FRACTAL_NZ", "C1HWNCoC0": "C1HWNCoC0", "NCHW": "NCHW", "NHWC": "NHWC", "HWCN": "HWCN",
            "NDHWC": "NDHWC", "NCDHW": "NCDHW", "DHWCN": "DHWCN", "NDC1HWC0": "NDC1HWC0",
            "NC1HWC0": "NC1HWC0", "FRACTAL_Z_3D": "FRACTAL_Z_3D", "FracZNLSTM": "FRACTAL_ZN_LSTM",
            "FracZNRNN": "FRACTAL_ZN_RNN", "ND_RNNBIAS": "ND_RNN_BIAS", "ChannelLast": "ChannelLast"}


class DataType:
    """(dtype, format) pairs named <DTYPE>_<FORMAT>, e.g. F32_Default = ("float32",
    "DefaultFormat"); <DTYPE>_Default_Tuple and _List add the container kind."""


for _p, _d in _DTYPES.items():
    for _s, _f in _FORMATS.items():
        setattr(DataType, f"{_p}_{_s}", (_d, _f))
    setattr(DataType, f"{_p}_Default_Tuple", (_d, "DefaultFormat", "tuple"))
    setattr(DataType, f"{_p}_Default_List", (_d, "DefaultFormat", "list"))


class RegOp:
    """Collects an operator's inputs, outputs, attributes and supported (dtype, format) rows;
    every setter returns self so that calls chain."""
    _imply_type = ""

    def __init__(self, op_name=""):
        if not isinstance(op_name, str):
            raise TypeError(f"{type(self).__name__}: argument 'op_name' must be a str, got {type(op_name).__name__}")
        self.op_name = op_name
        self.inputs, self.outputs, self.attr_, self.dtype_format_ = [], [], [], []
        self.fields = {}

    def _io(self, where, index, name, **kwargs):
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
            raise ValueError(f"{type(self).__name__}: an input/output index must be an int >= 0, got {index!r}")
        where.append({k: v for k, v in dict(index=index, name=name, **kwargs).items() if v is not None})
        return self

    def input(self, index=None, name=None, param_type=None, **kwargs):
        """Declares input `index` named `name`."""
        return self._io(self.inputs, index, name, param_type=param_type, **kwargs)

    def output(self, index=None, name=None, param_type=None, **kwargs):
        """Declares output `index` named `name`."""
        return self._io(self.outputs, index, name, param_type=param_type, **kwargs)

    def attr(self, name=None, param_type=None, value_type=None, value=None, default_value=None, **kwargs):
        """Declares an attribute."""
        entry = dict(name=name, param_type=param_type, type=value_type, value=value,
                     default_value=default_value, **kwargs)
        self.attr_.append({k: v for k, v in entry.items() if v is not None})
        return self

    def dtype_format(self, *args):
        """One supported row: a (dtype, format) pair per input, then per output."""
        if len(args) != len(self.inputs) + len(self.outputs):
            raise ValueError(f"{type(self).__name__}.dtype_format: needs one (dtype, format) pair per "
                             f"input and output ({len(self.inputs) + len(self.outputs)}), got {len(args)}")
        for a in args:
            if not isinstance(a, tuple) or len(a) not in (2, 3) or not all(isinstance(v, str) for v in a):
                raise TypeError(f"{type(self).__name__}.dtype_format: each item must be a DataType pair "
                                f"such as DataType.F32_Default, got {a!r}")
        self.dtype_format_.append(tuple(args))
        return self

    def get_op_info(self):
        """What was declared, as a dict."""
        return dict(op_name=self.op_name, imply_type=self._imply_type, inputs=list(self.inputs),
                    outputs=list(self.outputs), attr=list(self.attr_), dtype_format=list(self.dtype_format_),
                    **self.fields)


def _setter(field):
    def set_field(self, value=None):
        self.fields[field] = value
        return self
    set_field.__name__ = field
    set_field.__doc__ = f"Records {field}."
    return set_field


class CustomRegOp(RegOp):
    """Registration info of an ops.Custom operator (its reg_info argument)."""
    _imply_type = "Custom"

    def __init__(self, op_name="Custom"):
        super().__init__(op_name)


class AiCPURegOp(RegOp):
    """Registration info of an Ascend AiCPU kernel."""
    _imply_type = "AiCPU"


class TBERegOp(RegOp):
    """Registration info of an Ascend TBE kernel."""
    _imply_type = "TBE"


for _cls, _names in ((CustomRegOp, ("target",)), (RegOp, ("fusion_type",)),
                     (TBERegOp, ("async_flag", "binfile_name", "compute_cost", "kernel_name", "partial_flag",
                                 "reshape_type", "dynamic_shape", "dynamic_compile_static", "need_check_supported",
                                 "is_dynamic_format", "op_pattern", "unknown_shape_formats",
                                 "dynamic_rank_support", "real_input_index", "input_to_attr_index"))):
    for _n in _names:
        setattr(_cls, _n, _setter(_n))

_REGISTERED = {}  # op_name -> the info op_info_register saw


def op_info_register(op_info):
    """Decorator recording a kernel's registration info (a RegOp's get_op_info() or its JSON
    text); the function is returned unchanged."""
    def register(func):
        info = op_info.get_op_info() if isinstance(op_info, RegOp) else op_info
        name = info.get("op_name", getattr(func, "__name__", "")) if isinstance(info, dict) else func.__name__
        _REGISTERED[name] = info
        return func
    return register


def custom_info_register(*reg_info):
    """Decorator attaching registration info to a Custom operator's function (as `reg_info`)."""
    def decorator(func):  # the function itself: Custom may read its source (hybrid kernels)
        func.reg_info = [r.get_op_info() if isinstance(r, RegOp) else r for r in reg_info]
        return func
    return decorator


def get_vm_impl_fn(prim):
    """The Python function that evaluates primitive `prim` (its call), or None if it has none."""
    return (lambda *args: prim(*args)) if callable(prim) else None


__all__ = ["DataType", "CustomRegOp", "AiCPURegOp", "TBERegOp", "op_info_register", "custom_info_register",
           "get_vm_impl_fn"]
