"""Table rows for complex(real, imag) and angle (numpy.angle: pi for negative reals)."""
import numpy as np

from op_cases import OpCase


def _angle_gen(rng, dtype):
    if np.dtype(dtype).kind == "c":
        return [(rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))).astype(dtype)]
    x = rng.normal(size=(3, 4))
    x[0, 0] = 0.0  # numpy: angle 0 (a -0.0 would give pi)
    return [x.astype(dtype)]


CASES = [
    OpCase("complex", lambda a, b: a + 1j * b, [(3, 4), (3, 4)]),
    OpCase("complex", lambda a, b: a + 1j * b, [(), ()], id="0d"),
    OpCase("complex", lambda a, b: a + 1j * b, [(0, 2), (0, 2)], id="empty"),
    OpCase("angle", lambda x: np.angle(x).astype(x.real.dtype), _angle_gen,
           dtypes=("float16", "float32", "float64", "complex64", "complex128"), rtol=1e-6),
]
