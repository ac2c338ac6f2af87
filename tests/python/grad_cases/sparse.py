"""Sparse (CSR) ops: SpMM both ways, SDDMM and the gather/scatter pair at a fixed pattern; the
index arrays (int32) get no gradient."""
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


CASES = [
    GradCase("csr_spmm", _with("nnz", (5, 3)), dict(shape=SHAPE)),
    GradCase("csr_spmm", _with("nnz", (4, 2)), dict(shape=SHAPE, transpose_a=True), id="transposed"),
    GradCase("csr_sddmm", _with((4, 3), (5, 3)), dict(shape=SHAPE)),
    GradCase("csr_gather", _with(SHAPE), dict(shape=SHAPE)),
    GradCase("csr_scatter", _with("nnz"), dict(shape=SHAPE)),
]
