"""The ten dtypes, spelled as in MindSpore (mycel.float32, ...)."""
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
half, single, double = float16, float32, float64
float_, int_ = float32, int64

# str(mycel.float32) is 'Float32', as MindSpore prints it (repr already is); code that needs the
# lowercase numpy spelling reads dtype.name.
dtype.__str__ = dtype.__repr__
dtype.__format__ = lambda self, spec: format(repr(self), spec)
