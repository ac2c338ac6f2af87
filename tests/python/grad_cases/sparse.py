"""Sparse (CSR) ops: SpMM both ways, SDDMM and the gather/scatter pair at a fixed pattern, the
CSR x CSR product, and MindSpore's sparse_ops with value-sized outputs (segment mean, the COO ->
CSR conversion and the CSR transpose); the index arrays get no gradient."""
import numpy as np

from . import GradCase

SHAPE = (4, 5)


def _pattern(rng):
    """indptr, indices of a 4 x 5 pattern with an empty row and a repeated-free column order."""
    mask = rng.random(SHAPE) < 0.5
    mask[1, :] = False
    rows, cols = np.nonzero(mask)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=SHAPE[0]))]).astype(np.int32)
    return ptr, cols.astype(np.int32)


def _with(*tail):
    def gen(rng):
        ptr, ind = _pattern(rng)
        return [ptr, ind] + [rng.standard_normal(s if s != "nnz" else (len(ind),)) for s in tail]
    return gen


def _spgemm_inputs(rng):
    """A (4, 5) and B (5, 3), CSR with float64 values."""
    a_ptr, a_ind = _pattern(rng)
    mask = rng.random((5, 3)) < 0.5
    rows, cols = np.nonzero(mask)
    b_ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=5))]).astype(np.int32)
    return [a_ptr, a_ind, rng.standard_normal(len(a_ind)), b_ptr, cols.astype(np.int32),
            rng.standard_normal(len(cols))]


def _coo_inputs(rng):
    """MindSpore's COO arrays of a (2, 3, 4) tensor at 7 positions in any order."""
    flat = rng.choice(24, size=7, replace=False)
    idx = np.stack(np.unravel_index(flat, (2, 3, 4)), 1).astype(np.int64)
    return [idx, rng.standard_normal(7), np.array([2, 3, 4], np.int64)]


def _batched_csr_inputs(rng):
    """The batched CSR arrays of a (2, 3, 4) matrix (int32 structure, float64 values)."""
    mask = rng.random((2, 3, 4)) < 0.5
    bp, rp, col = [0], [], []
    for m in mask:
        r, c = np.nonzero(m)
        bp.append(bp[-1] + len(c))
        rp += np.concatenate([[0], np.cumsum(np.bincount(r, minlength=3))]).tolist()
        col += c.tolist()
    i32 = np.int32
    return [np.array([2, 3, 4], i32), np.array(bp, i32), np.array(rp, i32), np.array(col, i32),
            rng.standard_normal(len(col))]


def _segment_inputs(rng):
    return [rng.standard_normal((5, 3)), np.array([0, 2, 1, 4, 4], np.int32), np.array([0, 0, 2, 2, 3], np.int32),
            np.array([5], np.int32)]


CASES = [
    GradCase("csr_spmm", _with("nnz", (5, 3)), dict(shape=SHAPE)),
    GradCase("csr_spmm", _with("nnz", (4, 2)), dict(shape=SHAPE, transpose_a=True), id="transposed"),
    GradCase("csr_sddmm", _with((4, 3), (5, 3)), dict(shape=SHAPE)),
    GradCase("csr_gather", _with(SHAPE), dict(shape=SHAPE)),
    GradCase("csr_scatter", _with("nnz"), dict(shape=SHAPE)),
    # the product's values (output 2) get the cotangent; the pattern is fixed by the inputs'
    GradCase("csr_spgemm", _spgemm_inputs, dict(shape=SHAPE, shape_b=(5, 3)), wrt=[2, 5], outputs=[2]),
    GradCase("sparse_segment_mean_with_num_segments", _segment_inputs, wrt=[0]),
    GradCase("sparse_tensor_to_csr_sparse_matrix", _coo_inputs, wrt=[1], outputs=[4]),
    GradCase("sparse_matrix_transpose", _batched_csr_inputs, dict(conjugate=False), wrt=[4], outputs=[4]),
]
