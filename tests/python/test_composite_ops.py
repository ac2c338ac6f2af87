"""masked_fill, chunk and linspace (python/mycel/ops/composite.py) against numpy, eagerly and
compiled, and masked_fill's gradient against its closed form."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops


def both_modes(fn, *args):
    eager = fn(*args)
    compiled = mycel.jit(fn)(*args)
    return eager, compiled


def test_masked_fill_matches_numpy_where():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    mask = rng.random((1, 4)) < 0.5
    want = np.where(mask, np.float32(-7.5), x)
    for out in both_modes(lambda a, m: ops.masked_fill(a, m, -7.5), Tensor(x), Tensor(mask)):
        np.testing.assert_array_equal(out.asnumpy(), want)
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = ops.masked_fill(Tensor(ints), Tensor(ints > 2), 0)
    np.testing.assert_array_equal(out.asnumpy(), np.where(ints > 2, 0, ints))
    assert out.dtype == mycel.int32


def test_masked_fill_gradient_is_zero_where_filled():
    x = Tensor(np.array([1.0, 2.0, 3.0], np.float32))
    mask = Tensor(np.array([True, False, True]))
    g = mycel.grad(lambda a: (ops.masked_fill(a, mask, 5.0) * a).sum())(x)
    np.testing.assert_array_equal(g.asnumpy(), [5.0, 4.0, 5.0])  # d/da of 5a and a^2


@pytest.mark.parametrize("n,chunks", [(10, 3), (9, 3), (4, 6), (1, 1)])
def test_chunk_splits_like_numpy_array_split_of_ceil_sizes(n, chunks):
    x = np.arange(2 * n, dtype=np.float32).reshape(2, n)
    size = -(-n // chunks)
    want = [x[:, i:i + size] for i in range(0, n, size)]
    for out in both_modes(lambda a: ops.chunk(a, chunks, axis=1), Tensor(x)):
        assert len(out) == len(want)
        for o, w in zip(out, want):
            np.testing.assert_array_equal(o.asnumpy(), w)


@pytest.mark.parametrize("start,end,steps", [(0.0, 1.0, 5), (-2.0, 3.5, 12), (1.0, 1.0, 1), (3.0, -1.0, 2)])
def test_linspace_matches_numpy(start, end, steps):
    want = np.linspace(start, end, steps, dtype=np.float32)
    for out in both_modes(lambda: ops.linspace(start, end, steps)):
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6, atol=1e-6)
        assert out.asnumpy()[-1] == np.float32(end)
