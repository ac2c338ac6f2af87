"""The row-copy path of the offset-table gather (kernels/cpu/shape.cc: ops whose last axis is
copied whole, e.g. attention's head transpose): equal to numpy on odd sizes, short and long rows,
ranks 2-5, sizes where the two threads' shares end inside a run of rows, and the other dtypes."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops


def arr(shape, dtype=np.float32, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 10).astype(dtype)


CASES = [((128, 64, 32), (1, 0, 2)), ((7, 13, 5), (1, 0, 2)), ((3, 5, 7, 9), (2, 0, 1, 3)),
         ((2, 3, 4, 5, 6), (4, 2, 0, 1, 3)), ((5, 3, 130), (1, 0, 2)), ((33, 17, 1), (1, 0, 2)),
         ((1, 1, 7), (1, 0, 2)), ((257, 3), (0, 1)), ((4, 300, 65), (1, 0, 2))]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,perm", CASES)
def test_transpose_keeping_last_axis(shape, perm, threads):
    mycel.set_context(num_threads=threads)
    x = arr(shape)
    np.testing.assert_array_equal(ops.transpose(Tensor(x), perm).asnumpy(), np.transpose(x, perm))


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.int64, np.bool_, np.float16])
def test_dtypes(dtype):
    x = arr((6, 50, 9)).astype(dtype)
    np.testing.assert_array_equal(ops.transpose(Tensor(x), (1, 0, 2)).asnumpy(),
                                  np.transpose(x, (1, 0, 2)))


def test_broadcast_and_tile_and_slice_rows():
    mycel.set_context(num_threads=2)
    x = arr((40, 1, 33))
    np.testing.assert_array_equal(ops.broadcast_to(Tensor(x), (40, 70, 33)).asnumpy(),
                                  np.broadcast_to(x, (40, 70, 33)))
    y = arr((9, 11, 21))
    np.testing.assert_array_equal(ops.tile(Tensor(y), (3, 2, 1)).asnumpy(), np.tile(y, (3, 2, 1)))
    z = arr((60, 50, 40))
    np.testing.assert_array_equal(Tensor(z)[5:55:3, ::-2, :].asnumpy(), z[5:55:3, ::-2, :])
