"""Linear algebra of MindSpore 2.x's functional ops, einsum included."""
import math

import numpy as np

import mycel.ops as _P  # the Python-level ops (masked_fill, assign, ...); this package loads last
from mycel import _mycel
from mycel.common.dtype import (float16, bfloat16, float32, float64, int32, int64, bool_, complex64,
                                complex128)
from mycel.common.parameter import Parameter as _Parameter
from mycel.common.tensor import Tensor
from mycel.ops import tensor_composites as _tc
from mycel.ops.primitive import constexpr
from mycel.ops.function_more._base import _axis, _float_like, _FLOATS, _COMPLEX

_ops = _mycel.ops

# ---- linear algebra ------------------------------------------------------------------------------
def outer(input, vec2):
    """The outer product of two 1-d tensors."""
    return _ops.expand_dims(input, 1) * _ops.expand_dims(vec2, 0)


ger = outer


def inner(input, other):
    """The sum over the last dimensions of input and other (a scalar operand multiplies)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    a = input.reshape(tuple(input.shape[:-1]) + (1,) * (other.ndim - 1) + (input.shape[-1],))
    return _ops.sum(a * other, (-1,))


def mm(input, mat2):
    """The product of two 2-d matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise ValueError(f"mm: expected two 2-d tensors, got shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
    return _ops.matmul(input, mat2)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return input * beta + _ops.matmul(mat, vec) * alpha


def addr(x, vec1, vec2, *, beta=1, alpha=1):
    """beta * x + alpha * outer(vec1, vec2)."""
    return x * beta + outer(vec1, vec2) * alpha


def baddbmm(input, batch1, batch2, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    return input * beta + _P.bmm(batch1, batch2) * alpha


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum over the batch of batch1 @ batch2."""
    return input * beta + _ops.sum(_P.bmm(batch1, batch2), (0,)) * alpha


def adjoint(x):
    """The conjugate transpose of the last two dimensions."""
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    y = _ops.transpose(x, perm)
    return _ops.conj(y) if x.dtype in _COMPLEX else y


def logdet(input):
    """log(det(input)) (NaN where the determinant is negative)."""
    return _ops.log(_ops.det(input))


def tensor_dot(x1, x2, axes):
    """Contraction over axes: an int n (the last n of x1 with the first n of x2) or a pair of
    axis lists (MindSpore's ops.tensor_dot)."""
    if isinstance(axes, int):
        a1, a2 = tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    else:
        a1, a2 = axes
        a1 = (a1,) if isinstance(a1, int) else tuple(a1)
        a2 = (a2,) if isinstance(a2, int) else tuple(a2)
    a1 = tuple(a % x1.ndim for a in a1)
    a2 = tuple(a % x2.ndim for a in a2)
    if len(a1) != len(a2) or any(x1.shape[i] != x2.shape[j] for i, j in zip(a1, a2)):
        raise ValueError(f"tensor_dot: axes {a1} of shape {tuple(x1.shape)} and {a2} of shape "
                         f"{tuple(x2.shape)} do not match")
    free1 = tuple(i for i in range(x1.ndim) if i not in a1)
    free2 = tuple(i for i in range(x2.ndim) if i not in a2)
    k = int(np.prod([x1.shape[i] for i in a1])) if a1 else 1
    m1 = _ops.transpose(x1, free1 + a1).reshape((-1, k))
    m2 = _ops.transpose(x2, a2 + free2).reshape((k, -1))
    return _ops.matmul(m1, m2).reshape(tuple(x1.shape[i] for i in free1) + tuple(x2.shape[i] for i in free2))


def kron(input, other):
    """The Kronecker product (the lower-rank operand gets leading 1s)."""
    nd = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (nd - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    sa = []
    sb = []
    for d in range(nd):
        sa += [a.shape[d], 1]
        sb += [1, b.shape[d]]
    out = a.reshape(tuple(sa)) * b.reshape(tuple(sb))
    return out.reshape(tuple(a.shape[d] * b.shape[d] for d in range(nd)))


def cross(input, other, dim=None):
    """The cross product along dim (the first dimension of size 3 when dim is None)."""
    if dim is None:
        dims = [d for d in range(input.ndim) if input.shape[d] == 3]
        if not dims:
            raise ValueError(f"cross: no dimension of size 3 in shape {tuple(input.shape)}")
        dim = dims[0]
    d = _axis(input, dim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise ValueError(f"cross: dimension {dim} must have size 3, got shapes {tuple(input.shape)} "
                         f"and {tuple(other.shape)}")
    a = [_tc.narrow(input, d, i, 1) for i in range(3)]
    b = [_tc.narrow(other, d, i, 1) for i in range(3)]
    return _ops.concat((a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]), d)


def diag(input):
    """TensorFlow's diag, as MindSpore's: a rank-k input of shape S gives the rank-2k tensor of
    shape S + S with input on its diagonal."""
    shape = tuple(input.shape)
    n = int(np.prod(shape)) if shape else 1
    flat = input.reshape((n,))
    eye = _ops.cast(_ops.eye(n, n, float32), input.dtype) if input.dtype != bool_ else _ops.eye(n, n, float32) > 0
    return (_ops.expand_dims(flat, 1) * eye).reshape(shape + shape)


@constexpr
def _diagonal_mask(n, m, offset):
    """The (n, m) float32 indicator of diagonal `offset`."""
    return Tensor((np.arange(m)[None, :] - np.arange(n)[:, None] == offset).astype(np.float32))


@constexpr
def _diagonal_span(n, m, offset):
    """(first row, length) of diagonal `offset` of an n x m matrix."""
    start = max(0, -offset)
    return start, max(0, min(n, m - offset) - start)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes, as the last dimension (PyTorch's/NumPy's)."""
    d1, d2 = _axis(input, dim1), _axis(input, dim2)
    if d1 == d2:
        raise ValueError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    rest = tuple(d for d in range(input.ndim) if d not in (d1, d2))
    x = _ops.transpose(input, rest + (d1, d2))
    n, m = x.shape[-2], x.shape[-1]
    start, length = _diagonal_span(n, m, offset)
    on_diagonal = _diagonal_mask(n, m, offset)
    if x.dtype == bool_:
        picked = _ops.any(_ops.logical_and(x, _ops.cast(on_diagonal, bool_)), (-1,))
    else:
        picked = _ops.sum(x * _ops.cast(on_diagonal, x.dtype), (-1,))
    return _tc.narrow(picked, -1, start, length)


def trace(input):
    """The sum of the main diagonal of a 2-d tensor."""
    if input.ndim != 2:
        raise ValueError(f"trace: expected a 2-d tensor, got shape {tuple(input.shape)}")
    return _ops.sum(diagonal(input), ())


def diagflat(input, offset=0):
    """A 2-d tensor with input (flattened) on diagonal `offset`."""
    flat = input.reshape((-1,))
    square = diag(flat)
    k = abs(offset)
    pads = (0, k, k, 0) if offset > 0 else (k, 0, 0, k)
    return _ops.pad(square, pads) if k else square


def _einsum_parse(equation, ranks):
    """[(labels of each operand)], output labels: '...' expanded to capital letters, checked."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: equation {equation!r} has {len(terms)} operands, got {len(ranks)} tensors")
    ell = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    n_ell = 0
    parsed = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            k = rank - (len(term) - 3)
            if k < 0:
                raise ValueError(f"einsum: operand '{term}' has more labels than its {rank} dimensions")
            n_ell = max(n_ell, k)
            term = term.replace("...", ell[n_ell - k:n_ell] if k else "")
        if len(term) != rank or not all(c.isalpha() and c.islower() or c in ell for c in term):
            raise ValueError(f"einsum: operand labels '{term}' do not match a {rank}-d tensor")
        parsed.append(term)
    if arrow:
        out = out.replace("...", ell[:n_ell])
    else:  # implicit output: the ellipsis, then the labels used once, sorted
        counts = {}
        for t in parsed:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell[:n_ell] + "".join(sorted(c for c, n in counts.items() if n == 1 and c.islower()))
    return parsed, out


def _einsum_schedule(equation, shapes):
    """The whole contraction, planned from the shapes when the call is compiled: per operand the
    (i, j) diagonals to take, per pair (perm_a, shape_a, perm_b, shape_b, out_shape) of one
    batched matmul, then the axes to sum and the final permutation."""
    terms, out = _einsum_parse(equation, tuple(len(sh) for sh in shapes))
    size = {}
    diags, labels = [], []
    for term, shape in zip(terms, shapes):
        for c, n in zip(term, shape):
            if size.setdefault(c, n) != n and n != 1 and size[c] != 1:
                raise ValueError(f"einsum: label '{c}' has sizes {size[c]} and {n}")
            size[c] = max(size[c], n)
        steps, lab, shp = [], term, list(shape)
        while True:
            dup = next((c for c in lab if lab.count(c) > 1), None)
            if dup is None:
                break
            i = lab.index(dup)
            j = lab.index(dup, i + 1)
            if shp[i] != shp[j]:
                raise ValueError(f"einsum: repeated label '{dup}' has sizes {shp[i]} and {shp[j]}")
            steps.append((i, j))
            lab = "".join(c for k, c in enumerate(lab) if k not in (i, j)) + dup
            shp = [n for k, n in enumerate(shp) if k not in (i, j)] + [shp[i]]
        for c, n in zip(lab, shp):
            if n != size[c]:
                raise ValueError(f"einsum: label '{c}' has sizes {n} and {size[c]} (no broadcasting)")
        diags.append(tuple(steps))
        labels.append(lab)

    def prod(ls):
        out_ = 1
        for c in ls:
            out_ *= size[c]
        return out_
    pairs, la = [], labels[0]
    for k in range(1, len(labels)):
        lb, keep = labels[k], "".join(labels[k + 1:]) + out
        batch = [c for c in la if c in lb and c in keep]
        contract = [c for c in la if c in lb and c not in keep]
        free_a = [c for c in la if c not in lb]
        free_b = [c for c in lb if c not in la]
        pairs.append((tuple(la.index(c) for c in batch + free_a + contract),
                      (prod(batch), prod(free_a), prod(contract)),
                      tuple(lb.index(c) for c in batch + contract + free_b),
                      (prod(batch), prod(contract), prod(free_b)),
                      tuple(size[c] for c in batch + free_a + free_b)))
        la = "".join(batch + free_a + free_b)
    gone = tuple(i for i, c in enumerate(la) if c not in out)
    kept = "".join(c for c in la if c in out)
    perm = tuple(kept.index(c) for c in out)
    return tuple(diags), tuple(pairs), gone, (perm if perm != tuple(range(len(perm))) else ())


_einsum_plan = constexpr(_einsum_schedule)


def _take_diagonals(x, steps):
    for i, j in steps:
        x = diagonal(x, 0, i, j)  # the diagonal becomes the last dimension
    return x


def einsum(equation, *operands):
    """Einstein summation (NumPy's notation: 'ij,jk->ik', '...' for leading dimensions, implicit
    output). Operands are contracted left to right, each pair as one batched matmul; a label
    repeated within an operand takes its diagonal. The plan is made from the shapes at compile
    time, so graph mode runs only the transposes, reshapes and matmuls."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    diags, pairs, gone, perm = _einsum_plan(equation, tuple(x.shape for x in operands))
    acc = _take_diagonals(operands[0], diags[0])
    for (perm_a, shape_a, perm_b, shape_b, shape_out), b, steps in zip(pairs, operands[1:], diags[1:]):
        a3 = _ops.transpose(acc, perm_a).reshape(shape_a)
        b3 = _ops.transpose(_take_diagonals(b, steps), perm_b).reshape(shape_b)
        acc = _P.bmm(a3, b3).reshape(shape_out)
    if gone:
        acc = _ops.sum(acc, gone)
    if perm:
        acc = _ops.transpose(acc, perm)
    return acc


def mv(mat, vec):
    """The product of a matrix and a vector."""
    if mat.ndim != 2 or vec.ndim != 1:
        raise ValueError(f"mv: expected a 2-d matrix and a 1-d vector, got shapes {tuple(mat.shape)} and {tuple(vec.shape)}")
    return _ops.matmul(mat, vec)


def matrix_band_part(x, lower, upper):
    """x with everything outside the band (lower diagonals below, upper above; -1: all) zeroed."""
    n, m = x.shape[-2], x.shape[-1]
    # A mask from each element's distance below the diagonal: lower and upper may be ints,
    # 0-d integer tensors or values known only when a compiled program runs, which triu/tril's
    # compile-time diagonal cannot take.
    below = _ops.arange(n).reshape((n, 1)) - _ops.arange(m).reshape((1, m))
    lo = _ops.zeros_like(below) + lower  # the bounds broadcast to the mask's shape
    hi = _ops.zeros_like(below) + upper
    keep = _ops.logical_and(_ops.logical_or(lo < 0, below <= lo), _ops.logical_or(hi < 0, -below <= hi))
    return _ops.select(keep, x, _ops.zeros_like(x))


@constexpr
def _pdist_rows(n):
    """Flat indices i * n + j of the pairs i < j, row by row."""
    i, j = np.triu_indices(n, 1)
    return Tensor((i * n + j).astype(np.int64))


def pdist(input, p=2.0):
    """The p-norm distances between the rows of input (..., N, M), the pairs i < j in row order
    (p >= 0; p = 0 counts the differing entries, p = inf takes the largest difference)."""
    p = float(p)
    if not p >= 0:
        raise ValueError(f"pdist: 'p' must be >= 0, got {p}")
    n = input.shape[-2]
    diff = _ops.abs(_ops.expand_dims(input, -2) - _ops.expand_dims(input, -3))
    if p == 0:
        full = _ops.sum(_ops.cast(_ops.not_equal(diff, 0), diff.dtype), (-1,))
    elif p == float("inf"):
        full = _ops.max(diff, (-1,))
    else:
        full = _ops.pow(_ops.sum(_ops.pow(diff, p), (-1,)), 1.0 / p)
    return _ops.gather(full.reshape(tuple(input.shape[:-2]) + (n * n,)), _pdist_rows(n), input.ndim - 2)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the variables in input's rows (observations in columns), NumPy's rule for
    frequency and analytic weights."""
    x = _ops.cast(input, float32) if input.dtype not in _FLOATS else input
    if x.ndim == 1:
        x = x.reshape((1, -1))
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = _ops.cast(fweights, x.dtype)
    if aweights is not None:
        a = _ops.cast(aweights, x.dtype)
        w = a if w is None else w * a
    if w is None:
        mean = _ops.mean(x, (1,), True)
        xc = x - mean
        return _ops.matmul(xc, xc, transpose_b=True) / (n - correction)
    wsum = _ops.sum(w)
    mean = _ops.sum(x * w, (1,), True) / wsum
    xc = x - mean
    if aweights is None:
        norm = wsum - correction
    else:
        norm = wsum - correction * _ops.sum(w * _ops.cast(aweights, x.dtype)) / wsum
    return _ops.matmul(xc * w, xc, transpose_b=True) / norm


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose (dim1, dim2) planes hold input's last dimension on diagonal `offset`."""
    n = input.shape[-1]
    plane = _ops.expand_dims(input, -1) * _ops.cast(_ops.eye(n, n, float32), input.dtype)
    if offset:
        k = abs(offset)
        lead = (0, 0) * (input.ndim - 1)
        plane = _ops.pad(plane, lead + ((0, k, k, 0) if offset > 0 else (k, 0, 0, k)))
    return _ops.transpose(plane, _embed_perm(input.ndim + 1, dim1, dim2))


@constexpr
def _embed_perm(out_nd, dim1, dim2):
    """The permutation putting a (..., r, c) plane's r at dim1 and c at dim2."""
    d1, d2 = dim1 % out_nd, dim2 % out_nd
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    perm, b = [], 0
    for k in range(out_nd):
        if k == d1:
            perm.append(out_nd - 2)
        elif k == d2:
            perm.append(out_nd - 1)
        else:
            perm.append(b)
            b += 1
    return tuple(perm)


def cond(A, p=None):
    """The condition number: the ratio of the largest to the smallest singular value (p None or 2),
    else norm(A, p) * norm(inv(A), p)."""
    if p is None or p == 2:
        s = _P.svd(A, compute_uv=False)
        return _ops.max(s, (-1,)) / _ops.min(s, (-1,))
    return _P.norm(A, p, (-2, -1)) * _P.norm(_P.inverse(A), p, (-2, -1))

