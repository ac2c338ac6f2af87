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
