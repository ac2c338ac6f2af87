"""The dtypes, spelled as in MindSpore (mycel.float32, ...). uint16/32/64 and complex64/128 are
taken by the ops that list them (creation, casts, views, add/sub/mul/div, equal/not_equal, neg,
abs/real/imag/conj, the bitwise ops); the others refuse them with an error naming the op and the
dtype."""
from mycel._mycel import dtype

bool_ = dtype.bool
int8 = dtype.int8
uint8 = dtype.uint8
int16 = dtype.int16
int32 = dtype.int32
int64 = dtype.int64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
uint16 = dtype.uint16
uint32 = dtype.uint32
uint64 = dtype.uint64
complex64 = dtype.complex64
complex128 = dtype.complex128
half, single, double = float16, float32, float64
float_, int_ = float32, int64

# str(mycel.float32) and repr are 'Float32', as MindSpore prints them; code that needs the
# lowercase numpy spelling reads dtype.name.
_MS_NAMES = {"bool": "Bool", "int8": "Int8", "uint8": "UInt8", "int16": "Int16", "int32": "Int32",
             "int64": "Int64", "float16": "Float16", "bfloat16": "BFloat16", "float32": "Float32",
             "float64": "Float64", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
             "complex64": "Complex64", "complex128": "Complex128"}
dtype.__repr__ = dtype.__str__ = lambda self: _MS_NAMES.get(self.name, self.name)
# f-strings and format() keep numpy's spelling ('float32'), as the C++ core's messages do, so an
# error message reads the same from either side.
dtype.__format__ = lambda self, spec: format(self.name, spec)

# The string dtype (a tensor of str elements never reaches a kernel: common/string_tensor.py),
# reachable as mycel.string and mycel.dtype.string like the others.
from mycel.common.string_tensor import string  # noqa: E402

dtype.string = string


def dtype_to_nptype(type_):
    """The numpy type of a dtype (MindSpore's dtype_to_nptype): np.float32 for float32, np.str_
    for string."""
    if type_ == string:
        return __import__("numpy").str_
    return __import__("numpy").dtype(type_.name).type


def dtype_to_pytype(type_):
    """The Python type of a dtype: bool, int, float, complex or str."""
    if type_ == string:
        return str
    kind = __import__("numpy").dtype(type_.name).kind
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind]


def pytype_to_dtype(obj):
    """The dtype of a Python or numpy type (MindSpore's pytype_to_dtype): bool -> bool_, int ->
    int64, float -> float64, str -> string, numpy types by name."""
    if isinstance(obj, (dtype, type(string))):
        return obj
    np_ = __import__("numpy")
    if obj is str or obj is np_.str_:
        return string
    if obj is bool:
        return bool_
    if obj is int:
        return int64
    if obj is float:
        return float64
    try:
        name = np_.dtype(obj).name
    except TypeError:
        raise NotImplementedError(f"pytype_to_dtype: unsupported type {obj!r}") from None
    return getattr(dtype, name)


def get_py_obj_dtype(obj):
    """The dtype of a Python value, a type or a Tensor (MindSpore's get_py_obj_dtype)."""
    if hasattr(obj, "dtype") and not isinstance(obj, type):
        return obj.dtype
    if isinstance(obj, type):
        return pytype_to_dtype(obj)
    return pytype_to_dtype(type(obj))


for _f in (dtype_to_nptype, dtype_to_pytype, pytype_to_dtype, get_py_obj_dtype):
    setattr(dtype, _f.__name__, staticmethod(_f))
# MindSpore's `mindspore.dtype` is this module; Mycel's `mycel.dtype` is the enum, so it carries
# the module's aliases too (`ms.dtype.bool_`, `ms.dtype.float_`, ...).
for _name in ("bool_", "half", "single", "double", "float_", "int_"):
    setattr(dtype, _name, globals()[_name])
