"""The gradient of a function whose output is a Python number (P.Size, a shape product): no
sensitivity flows, and each tensor input gets a zero gradient of its own shape and dtype, as
MindSpore's GradOperation gives, in both modes."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.ops import composite as C
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


class SizeNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.size = P.Size()

    def construct(self, x, y):
        return self.size(x) * y.shape[0]


class GradAll(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.grad = C.GradOperation(get_all=True)

    def construct(self, x, y):
        return self.grad(self.net)(x, y)


@MODES
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_grad_of_a_number_is_zero_per_input(mode, dtype):
    mycel.set_context(mode=mode)
    x = np.arange(6).reshape(2, 3).astype(dtype)
    y = np.ones(4, np.float16)
    assert SizeNet()(Tensor(x), Tensor(y)) == x.size * y.shape[0]
    gx, gy = GradAll(SizeNet())(Tensor(x), Tensor(y))
    for g, a in ((gx, x), (gy, y)):
        assert g.asnumpy().dtype == a.dtype and g.shape == a.shape
        np.testing.assert_array_equal(g.asnumpy(), np.zeros_like(a))
