"""MindSpore's sparse Cells: SparseToDense (a COOTensor to its dense Tensor) and
SparseTensorDenseMatmul (COO arrays times a dense matrix), over registry ops so that they
differentiate in the values and the dense operand, in both modes."""
from mycel import _mycel
from mycel.nn.cell import Cell

_ops = _mycel.ops


def coo_dense_matmul(indices, values, sparse_shape, dense, adjoint_st=False, adjoint_dt=False):
    """A (COO: indices (N, 2), values (N,), sparse_shape (M, N)) @ dense: rows of dense gathered
    at the column indices, scaled by the values and added into the rows (duplicates add up);
    adjoint_st / adjoint_dt transpose the sparse / dense operand first."""
    if indices.ndim != 2 or indices.shape[1] != 2:
        raise ValueError("SparseTensorDenseMatmul: indices must be (N, 2) for a 2-d sparse shape (M, N)")
    rows, cols = indices[:, 0], indices[:, 1]  # (a dynamic entry count compiles too)
    m, n = sparse_shape
    if adjoint_st:
        rows, cols, m, n = cols, rows, n, m
    if adjoint_dt:
        dense = _ops.transpose(dense, (1, 0))
    picked = _ops.mul(_ops.gather(dense, cols, axis=0), _ops.reshape(values, (-1, 1)))
    zeros = _ops.zeros((m, dense.shape[1]), dtype=dense.dtype)
    # a functional scatter: differentiable in the values and the dense operand
    return _ops.tensor_scatter_add(zeros, _ops.reshape(rows, (-1, 1)), picked)


class SparseToDense(Cell):
    """construct(sparse_tensor): the dense Tensor of a COOTensor."""

    def construct(self, sparse_tensor):
        return sparse_tensor.to_dense()


class SparseTensorDenseMatmul(Cell):
    """construct(indices, values, sparse_shape, dense): the dense product of COO arrays and a
    dense matrix (MindSpore's nn.SparseTensorDenseMatmul)."""

    def __init__(self, adjoint_st=False, adjoint_dt=False):
        super().__init__()
        self.adjoint_st, self.adjoint_dt = bool(adjoint_st), bool(adjoint_dt)

    def construct(self, indices, values, sparse_shape, dense):
        return coo_dense_matmul(indices, values, sparse_shape, dense, self.adjoint_st, self.adjoint_dt)


__all__ = ["SparseToDense", "SparseTensorDenseMatmul"]
