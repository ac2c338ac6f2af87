"""MindSpore's RowTensor (indices, values, dense_shape: the form of a sparse embedding gradient):
to_dense against numpy, the F helpers that build and read it, sums, a gradient through to_dense
against finite differences, an optimizer step with a RowTensor gradient equal to the dense step,
and to_dense compiled in graph mode."""
import numpy as np
import pytest

import mycel
from mycel import Parameter, RowTensor, Tensor, nn, ops
from mycel.ops import functional as F

R = np.random.default_rng(3)
IDX = np.array([3, 0, 3, 1], np.int32)


def _dense(idx, values, shape):
    out = np.zeros(shape)
    np.add.at(out, idx, values)
    return out


def test_row_tensor_to_dense_and_helpers():
    values = R.standard_normal((4, 3))
    rt = RowTensor(Tensor(IDX), Tensor(values), (5, 3))
    np.testing.assert_allclose(rt.to_dense().asnumpy(), _dense(IDX, values, (5, 3)))
    made = F.make_row_tensor(Tensor(IDX), Tensor(values), (5, 3))
    np.testing.assert_array_equal(F.row_tensor_get_indices(made).asnumpy(), IDX)
    np.testing.assert_array_equal(F.row_tensor_get_values(made).asnumpy(), values)
    assert F.row_tensor_get_dense_shape(made) == (5, 3) and made.dtype == mycel.float64
    twice = F.row_tensor_add(rt, made)
    np.testing.assert_allclose(twice.to_dense().asnumpy(), 2 * _dense(IDX, values, (5, 3)))
    base = R.standard_normal((5, 3))
    np.testing.assert_allclose((rt + Tensor(base)).asnumpy(), base + _dense(IDX, values, (5, 3)))
    np.testing.assert_allclose((rt * 0.5).to_dense().asnumpy(), 0.5 * _dense(IDX, values, (5, 3)))
    np.testing.assert_allclose(RowTensor(row_tensor=rt).to_dense().asnumpy(), rt.to_dense().asnumpy())
    # 3-d dense shape: each index names a (3, 2) slab
    v3 = R.standard_normal((2, 3, 2))
    np.testing.assert_allclose(RowTensor(Tensor(np.array([1, 1])), Tensor(v3), (2, 3, 2)).to_dense().asnumpy(),
                               _dense(np.array([1, 1]), v3, (2, 3, 2)))


def test_row_tensor_gradient_vs_finite_differences():
    values = R.standard_normal((4, 3))
    w = R.standard_normal((5, 3))

    def f(v):
        return ops.sum(RowTensor(Tensor(IDX), v, (5, 3)).to_dense() ** 2 * Tensor(w))

    got = mycel.grad(f)(Tensor(values)).asnumpy()
    base = float((_dense(IDX, values, (5, 3)) ** 2 * w).sum())
    num = np.zeros_like(values)
    for i in np.ndindex(values.shape):
        v = values.copy()
        v[i] += 1e-6
        num[i] = (float((_dense(IDX, v, (5, 3)) ** 2 * w).sum()) - base) / 1e-6
    np.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-5)


def test_optimizer_takes_a_row_tensor_gradient():
    init = R.standard_normal((5, 3)).astype(np.float32)
    values = R.standard_normal((4, 3)).astype(np.float32)
    p_sparse, p_dense = Parameter(Tensor(init), name="w_sparse"), Parameter(Tensor(init), name="w_dense")
    nn.SGD([p_sparse], learning_rate=0.1)((RowTensor(Tensor(IDX), Tensor(values), (5, 3)),))
    nn.SGD([p_dense], learning_rate=0.1)((Tensor(_dense(IDX, values, (5, 3)).astype(np.float32)),))
    np.testing.assert_allclose(p_sparse.asnumpy(), p_dense.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(p_sparse.asnumpy(), init - 0.1 * _dense(IDX, values, (5, 3)), rtol=1e-5, atol=1e-6)


class _RowNet(nn.Cell):
    def __init__(self, rt):
        super().__init__()
        self.rt = rt

    def construct(self, x):
        return self.rt.to_dense() * x


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_row_tensor_in_a_cell_both_modes(mode):
    mycel.set_context(mode=mode)
    try:
        values = R.standard_normal((4, 3))
        x = R.standard_normal((5, 3))
        out = _RowNet(RowTensor(Tensor(IDX), Tensor(values), (5, 3)))(Tensor(x))
        np.testing.assert_allclose(out.asnumpy(), _dense(IDX, values, (5, 3)) * x)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_row_tensor_errors():
    with pytest.raises(ValueError, match=r"values must have shape \(len\(indices\),\) \+ dense_shape\[1:\]"):
        RowTensor(Tensor(IDX), Tensor(np.ones((4, 2))), (5, 3))
    with pytest.raises(ValueError, match=r"row indices must be in \[0, 3\)"):
        RowTensor(Tensor(IDX), Tensor(np.ones((4, 3))), (3, 3))
    with pytest.raises(TypeError, match="int16, int32 or int64"):
        RowTensor(Tensor(np.array([0.5])), Tensor(np.ones((1, 3))), (3, 3))
    with pytest.raises(ValueError, match="dense shapes"):
        RowTensor(Tensor(IDX), Tensor(np.ones((4, 3))), (5, 3)) + RowTensor(Tensor(IDX), Tensor(np.ones((4, 3))), (6, 3))
    with pytest.raises(TypeError, match="expects a RowTensor"):
        F.row_tensor_get_values(Tensor(np.ones(3)))
