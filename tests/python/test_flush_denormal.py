"""mycel.set_flush_denormal (core/denormals.h): FTZ and DAZ on the calling thread and on every
thread of the kernel pool, off by default. A subnormal float32 times 1 stays subnormal with it off
and becomes 0 with it on, on a tensor large enough for every pool thread to take a share; the
setting reaches threads a larger team adds later; off again restores IEEE subnormals."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops, _mycel

TINY = np.float32(1e-39)  # below float32's smallest normal, 1.18e-38
assert 0 < TINY < np.finfo(np.float32).tiny


def product(n=1 << 20):
    x = Tensor(np.full(n, TINY, np.float32))
    return ops.mul(x, Tensor(np.float32(1.0))).asnumpy()


@pytest.fixture
def restore():
    threads = _mycel.get_num_threads()
    yield
    mycel.set_flush_denormal(False)
    mycel.set_context(num_threads=threads)


def test_off_by_default_keeps_subnormals(restore):
    assert not _mycel.flush_denormal()
    mycel.set_context(num_threads=2)
    np.testing.assert_array_equal(product(), TINY)


def test_on_flushes_on_every_pool_thread_and_off_restores(restore):
    mycel.set_context(num_threads=2)
    assert mycel.set_flush_denormal(True) is True
    assert _mycel.flush_denormal()
    np.testing.assert_array_equal(product(), 0)
    mycel.set_context(num_threads=4)  # a larger team: its new threads take the setting too
    np.testing.assert_array_equal(product(), 0)
    assert mycel.set_flush_denormal(False) is True
    assert not _mycel.flush_denormal()
    np.testing.assert_array_equal(product(), TINY)
