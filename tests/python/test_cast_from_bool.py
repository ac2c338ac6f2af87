"""cast from bool (convert_elements' mask path: the bits of 0 or 1 chosen per element) to every
dtype against numpy's astype, with lengths around the vector width and a parallel-sized one."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "complex64",
          "complex128"]


@pytest.mark.parametrize("n", [1, 7, 33, 1 << 20])
@pytest.mark.parametrize("name", DTYPES)
def test_cast_bool_matches_numpy(name, n):
    b = np.random.default_rng(n).standard_normal(n) > 0
    got = ops.cast(Tensor(b), getattr(mycel, name)).asnumpy()
    assert got.dtype == np.dtype(name)
    np.testing.assert_array_equal(got, b.astype(name))


@pytest.mark.parametrize("n", [5, 1 << 20])
def test_cast_bool_to_bfloat16(n):
    b = np.random.default_rng(n).standard_normal(n) > 0
    got = ops.cast(Tensor(b), mycel.bfloat16)
    assert got.dtype == mycel.bfloat16
    np.testing.assert_array_equal(got.astype(mycel.float32).asnumpy(), b.astype(np.float32))
    # Round trip: nonzero is True.
    np.testing.assert_array_equal(ops.cast(got, mycel.bool_).asnumpy(), b)
