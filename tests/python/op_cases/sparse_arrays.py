"""Table rows for MindSpore's sparse primitives with value-sized outputs (ops/sparse_arrays.cc):
sparse_count_sparse_output, sparse_segment_mean_with_num_segments and its gradient,
sparse_tensor_to_csr_sparse_matrix, sparse_matrix_transpose, against numpy (np.unique, np.add.at,
lexsort and bincount)."""
import numpy as np

from op_cases import OpCase

I64 = np.int64


def _count_ref(idx, val, shape, w, binary_output, minlength, maxlength):
    rank = idx.shape[1]
    keep = val < maxlength if maxlength > 0 else np.ones(val.shape, bool)
    batch = idx[:, 0] if rank == 2 else np.zeros(val.shape, I64)
    pairs = np.stack([batch[keep], val[keep]], 1).astype(I64)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    sums = np.zeros(len(uniq), w.dtype)
    np.add.at(sums, inv.ravel(), w[keep] if w.size else 1)
    if binary_output:
        sums = np.ones_like(sums)
    width = maxlength if maxlength > 0 else max(int(val[keep].max(initial=0)) + 1, minlength)
    dense = [shape[0], width] if rank == 2 else [width]
    return (uniq if rank == 2 else uniq[:, 1:]), sums, np.array(dense, I64)


def _count_gen(rank, weights=True):
    def gen(rng, dt):
        n = 9
        dims = np.array([4, 5][:rank], I64)
        idx = np.stack([rng.integers(0, d, n) for d in dims], 1).astype(I64)
        val = rng.integers(0, 7, n).astype(I64)
        w = rng.integers(-3, 4, n).astype(dt) if weights else np.zeros(0, dt)
        return [idx, val, dims, w]
    return gen


def _segment_mean_ref(x, index, seg, num):
    out = np.zeros((int(np.ravel(num)[0]),) + x.shape[1:], x.dtype)
    count = np.bincount(seg, minlength=out.shape[0])
    np.add.at(out, seg, x[index])
    nz = count > 0
    out[nz] /= count[nz].reshape((-1,) + (1,) * (x.ndim - 1))
    return out


def _segment_gen(rng, dt):
    x = rng.normal(size=(5, 3)).astype(dt)
    index = rng.integers(0, 5, 7).astype(np.int32)
    seg = np.sort(rng.integers(0, 4, 7)).astype(np.int32)
    return [x, index, seg, np.array(6, np.int32)]


def _segment_grad_ref(dout, index, seg, x):
    count = np.bincount(seg, minlength=dout.shape[0])
    out = np.zeros(x.shape, dout.dtype)
    np.add.at(out, index, dout[seg] / count[seg].reshape(-1, 1))
    return out


def _segment_grad_gen(rng, dt):
    x, index, seg, _ = _segment_gen(rng, dt)
    return [rng.normal(size=(6, 3)).astype(dt), index, seg, x]


def _to_csr_ref(idx, values, dims):
    rank = len(dims)
    b = idx[:, 0] if rank == 3 else np.zeros(len(idx), idx.dtype)
    r, c = idx[:, -2], idx[:, -1]
    order = np.lexsort((c, r, b))
    batches, rows = (dims[0] if rank == 3 else 1), dims[-2]
    bp = np.concatenate([[0], np.cumsum(np.bincount(b, minlength=batches))])
    rp = np.concatenate([np.concatenate([[0], np.cumsum(np.bincount(r[b == k], minlength=rows))])
                         for k in range(batches)])
    it = idx.dtype
    return dims, bp.astype(it), rp.astype(it), c[order].astype(it), values[order]


def _to_csr_gen(dims):
    def gen(rng, dt):
        # a fixed number of distinct positions (draws stack under vmap), in any order
        flat = rng.choice(int(np.prod(dims)), size=int(np.prod(dims)) * 2 // 5, replace=False)
        idx = np.stack(np.unravel_index(flat, dims), 1).astype(I64)
        kind = np.dtype(dt).kind
        values = rng.integers(-5, 6, len(idx)) if kind == "i" else rng.normal(size=len(idx))
        if kind == "c":
            values = values + 1j * rng.normal(size=len(idx))
        return [idx, values.astype(dt), np.array(dims, I64)]
    return gen


def _transpose_ref(dims, bp, rp, col, values, conjugate):
    rank = len(dims)
    batches, rows, cols = (dims[0] if rank == 3 else 1), dims[-2], dims[-1]
    trp, tcol, tval = [], [], []
    for k in range(batches):
        ptr = rp[k * (rows + 1):(k + 1) * (rows + 1)]
        c = col[bp[k]:bp[k + 1]]
        v = values[bp[k]:bp[k + 1]]
        r = np.repeat(np.arange(rows), np.diff(ptr))
        order = np.lexsort((r, c))  # by new row (old column), then new column (old row)
        trp.append(np.concatenate([[0], np.cumsum(np.bincount(c, minlength=cols))]))
        tcol.append(r[order])
        tval.append(np.conj(v[order]) if conjugate else v[order])
    tdims = dims.copy()
    tdims[-2], tdims[-1] = dims[-1], dims[-2]
    return (tdims, bp, np.concatenate(trp).astype(rp.dtype), np.concatenate(tcol).astype(col.dtype),
            np.concatenate(tval).astype(values.dtype))


def _transpose_gen(dims):
    def gen(rng, dt):
        idx, values, shape = _to_csr_gen(dims)(rng, dt)
        if np.dtype(dt).kind == "c":
            values = (values + 1j * rng.normal(size=values.shape)).astype(dt)
        return list(_to_csr_ref(idx.astype(np.int32), values, shape.astype(np.int32)))
    return gen


def _to_csr_grad_ref(idx, dims, dv):
    b = idx[:, 0] if len(dims) == 3 else np.zeros(len(idx), idx.dtype)
    order = np.lexsort((idx[:, -1], idx[:, -2], b))
    out = np.zeros_like(dv)
    out[order] = dv
    return out


def _to_csr_grad_gen(dims):
    def gen(rng, dt):
        idx, values, shape = _to_csr_gen(dims)(rng, dt)
        return [idx, shape, values]
    return gen


def _transpose_grad_ref(dims, bp, rp, col, dv, conjugate):
    rows = dims[-2]
    out = np.zeros_like(dv)
    for k in range(len(bp) - 1):
        c = col[bp[k]:bp[k + 1]]
        r = np.repeat(np.arange(rows), np.diff(rp[k * (rows + 1):(k + 1) * (rows + 1)]))
        order = np.lexsort((r, c))
        part = dv[bp[k]:bp[k + 1]]
        out[bp[k] + order] = np.conj(part) if conjugate else part
    return out


COUNT = dict(binary_output=False, minlength=-1, maxlength=-1)
CASES = [
    OpCase("sparse_count_sparse_output", _count_ref, _count_gen(2), COUNT,
           dtypes=("int32", "int64", "float32", "float64")),
    OpCase("sparse_count_sparse_output", _count_ref, _count_gen(1), COUNT, id="rank1", dtypes=("int64",)),
    OpCase("sparse_count_sparse_output", _count_ref, _count_gen(2, weights=False),
           dict(binary_output=False, minlength=9, maxlength=-1), id="unweighted_minlength", dtypes=("int64",)),
    OpCase("sparse_count_sparse_output", _count_ref, _count_gen(2),
           dict(binary_output=True, minlength=-1, maxlength=4), id="binary_maxlength", dtypes=("float32",)),
    OpCase("sparse_segment_mean_with_num_segments", _segment_mean_ref, _segment_gen),
    OpCase("sparse_segment_mean_grad", _segment_grad_ref, _segment_grad_gen),
    OpCase("sparse_tensor_to_csr_sparse_matrix", _to_csr_ref, _to_csr_gen((3, 4)),
           dtypes=("float32", "float64", "int32", "int64", "complex64", "complex128")),
    OpCase("sparse_tensor_to_csr_sparse_matrix", _to_csr_ref, _to_csr_gen((2, 3, 4)), id="batched"),
    OpCase("sparse_matrix_transpose", _transpose_ref, _transpose_gen((3, 5)), dict(conjugate=False),
           dtypes=("float32", "float64", "int32", "int64")),
    OpCase("sparse_matrix_transpose", _transpose_ref, _transpose_gen((2, 4, 3)), dict(conjugate=True),
           id="batched_conjugate", dtypes=("complex64", "complex128", "float32")),
    OpCase("sparse_tensor_to_csr_sparse_matrix_grad", _to_csr_grad_ref, _to_csr_grad_gen((2, 3, 4)),
           dtypes=("float32", "float64", "int32", "int64", "complex64", "complex128")),
    OpCase("sparse_matrix_transpose_grad", _transpose_grad_ref, _transpose_gen((2, 4, 3)), dict(conjugate=True),
           dtypes=("float32", "float64", "int32", "int64", "complex64", "complex128")),
]
