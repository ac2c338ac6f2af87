from . import OpCase

CASES = [
    OpCase("stop_gradient", lambda x: x, [(2, 3)], dtypes=("bool", "int8", "uint8", "int16", "int32", "int64",
                                                           "float16", "bfloat16", "float32", "float64")),
    OpCase("stop_gradient", lambda x: x, [()], id="0d"),
]
