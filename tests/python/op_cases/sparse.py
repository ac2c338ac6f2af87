"""Table rows for the sparse (CSR) ops: csr_spmm (both ways), csr_sddmm, csr_gather, csr_scatter,
csr2coo and coo2csr, against dense numpy products over the same pattern."""
import numpy as np

from op_cases import OpCase, make_input

VALUES = ("float32", "float64", "int32", "int64")
SHAPE = (5, 6)


def _pattern(shape=SHAPE, density=0.5, index="int32"):
    """A fixed pattern per shape (vmap's table stacks several draws of a row, so nnz must agree)."""
    mask = np.random.default_rng(7).random(shape) < density
    if shape[0] > 1:
        mask[1, :] = False  # an empty row
    rows, cols = np.nonzero(mask)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
    return ptr.astype(index), cols.astype(index)


def _rows(ptr):
    return np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))


def _dense(ptr, ind, val, shape):
    out = np.zeros(shape, val.dtype)
    np.add.at(out, (_rows(ptr), ind), val)
    return out


def _gen(*tail, shape=SHAPE, density=0.5, index="int32"):
    """(rng, dtype) -> [indptr, indices, *tail arrays]; "nnz" in tail is a (nnz,) values array."""
    def gen(rng, dt):
        ptr, ind = _pattern(shape, density, index)
        return [ptr, ind] + [make_input(rng, (len(ind),) if s == "nnz" else s, dt) for s in tail]
    return gen


def _spmm(ptr, ind, val, d, shape, transpose_a=False):
    a = _dense(ptr, ind, val, tuple(shape))
    return (a.T if transpose_a else a) @ d


def _sddmm(ptr, ind, x, y, shape):
    return (x @ y.T)[_rows(ptr), ind]


def _gather(ptr, ind, d, shape):
    return d[_rows(ptr), ind]


def _coo2csr_gen(rng, dt):
    rows = np.sort(rng.integers(0, 5, size=9))
    return [rows.astype(dt)]


def _spgemm_gen(rng, dt):
    """A (5, 6) and B (6, 4) on fixed patterns (an empty row in each)."""
    a_ptr, a_ind = _pattern(SHAPE, 0.5)
    b_ptr, b_ind = _pattern((6, 4), 0.4)
    return [a_ptr, a_ind, make_input(rng, (len(a_ind),), dt), b_ptr, b_ind, make_input(rng, (len(b_ind),), dt)]


def _spgemm_pattern(a_ptr, a_ind, b_ptr, b_ind, k):
    """The structural pattern of A B: (i, c) where some A[i, m] and B[m, c] are stored."""
    a = _dense(a_ptr, a_ind, np.ones(len(a_ind)), (len(a_ptr) - 1, len(b_ptr) - 1))
    b = _dense(b_ptr, b_ind, np.ones(len(b_ind)), (len(b_ptr) - 1, k))
    return (a @ b) > 0


def _spgemm(a_ptr, a_ind, a_val, b_ptr, b_ind, b_val, shape, shape_b):
    mask = _spgemm_pattern(a_ptr, a_ind, b_ptr, b_ind, shape_b[1])
    prod = _dense(a_ptr, a_ind, a_val, tuple(shape)) @ _dense(b_ptr, b_ind, b_val, tuple(shape_b))
    rows, cols = np.nonzero(mask)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))]).astype(a_ptr.dtype)
    return ptr, cols.astype(a_ind.dtype), prod[rows, cols].astype(a_val.dtype)


def _spgemm_grad_gen(rng, dt):
    arrays = _spgemm_gen(rng, dt)
    c_ptr, c_ind, _ = _spgemm(*arrays, shape=SHAPE, shape_b=(6, 4))
    return arrays + [c_ptr, c_ind, make_input(rng, (len(c_ind),), dt)]


def _spgemm_grad(a_ptr, a_ind, a_val, b_ptr, b_ind, b_val, c_ptr, c_ind, dc, shape, shape_b):
    """dA = (dC B^T) at A's pattern, dB = (A^T dC) at B's pattern."""
    dcd = _dense(c_ptr, c_ind, dc, (shape[0], shape_b[1]))
    a = _dense(a_ptr, a_ind, a_val, tuple(shape))
    b = _dense(b_ptr, b_ind, b_val, tuple(shape_b))
    return (dcd @ b.T)[_rows(a_ptr), a_ind], (a.T @ dcd)[_rows(b_ptr), b_ind]


CASES = [
    OpCase("csr_spmm", _spmm, _gen("nnz", (6, 3)), dict(shape=SHAPE), dtypes=VALUES),
    OpCase("csr_spmm", _spmm, _gen("nnz", (5, 4)), dict(shape=SHAPE, transpose_a=True), id="transposed"),
    OpCase("csr_spmm", _spmm, _gen("nnz", (6, 2), index="int64"), dict(shape=SHAPE), id="int64_index"),
    OpCase("csr_spmm", _spmm, _gen("nnz", (0, 2), shape=(4, 0)), dict(shape=(4, 0)), id="empty"),
    OpCase("csr_spmm", _spmm, _gen("nnz", (300, 40), shape=(200, 300), density=0.05), dict(shape=(200, 300)),
           id="large"),
    OpCase("csr_spmm", _spmm, _gen("nnz", (200, 40), shape=(200, 300), density=0.05),
           dict(shape=(200, 300), transpose_a=True), id="large_transposed"),
    OpCase("csr_sddmm", _sddmm, _gen((5, 3), (6, 3)), dict(shape=SHAPE), dtypes=VALUES),
    OpCase("csr_gather", _gather, _gen(SHAPE), dict(shape=SHAPE), dtypes=VALUES),
    OpCase("csr_scatter", lambda p, i, v, shape: _dense(p, i, v, tuple(shape)), _gen("nnz"), dict(shape=SHAPE),
           dtypes=VALUES),
    OpCase("csr_spgemm", _spgemm, _spgemm_gen, dict(shape=SHAPE, shape_b=(6, 4)), dtypes=VALUES),
    OpCase("csr_spgemm_grad", _spgemm_grad, _spgemm_grad_gen, dict(shape=SHAPE, shape_b=(6, 4)), dtypes=VALUES),
    OpCase("csr2coo", lambda p, length: _rows(p).astype(p.dtype),
           lambda rng, dt: [np.array([0, 2, 2, 5, 6], dt)], dict(length=6), dtypes=("int32", "int64")),
    OpCase("coo2csr", lambda r, height: np.concatenate([[0], np.cumsum(np.bincount(r, minlength=height))]).astype(r.dtype),
           _coo2csr_gen, dict(height=5), dtypes=("int32", "int64")),
]
