"""broadcast_to / broadcast_like of a one-element tensor is a fill (no per-element offset table):
every item size, against numpy's broadcast_to, eagerly and as sum's gradient in graph mode."""
import numpy as np
import pytest

import mycel as ms
from mycel import ops


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16, np.int32, np.float32,
                                   np.float64, np.int64, np.complex64, np.complex128])
@pytest.mark.parametrize("src_shape,shape", [((), (70001,)), ((1,), (3, 5)), ((1, 1), (2, 40000)),
                                             ((), (0, 4))])
def test_one_element_broadcast_matches_numpy(dtype, src_shape, shape):
    v = np.array(3 - 2j if np.issubdtype(dtype, np.complexfloating) else 3, dtype=dtype)
    src = np.broadcast_to(v, src_shape).copy()
    got = ops.broadcast_to(ms.Tensor(src), shape).asnumpy()
    np.testing.assert_array_equal(got, np.broadcast_to(src, shape))
    like = ms.Tensor(np.zeros(shape, np.float32))
    np.testing.assert_array_equal(ops.broadcast_like(ms.Tensor(src), like).asnumpy(),
                                  np.broadcast_to(src, shape))


def test_sum_gradient_in_graph_mode_is_the_fill():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        x = ms.Tensor(np.linspace(-1, 1, 100000).astype(np.float32))
        g = ms.grad(lambda t: (t * 3.0).sum())(x).asnumpy()
        np.testing.assert_array_equal(g, np.full(100000, 3.0, np.float32))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
