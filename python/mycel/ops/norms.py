"""MindSpore's norms: ops.vector_norm, ops.matrix_norm and ops.norm (which picks one of them as
MindSpore and numpy.linalg.norm do). Plain Python over registry ops (abs, sum, max, min, pow,
svd), so graph mode parses them and their gradients come from the ops they call."""
from mycel import _mycel
from mycel.common.norm_args import matrix_plan, norm_kind, vector_axes
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops
_INF = float("inf")


def _check(name, x, dtype):
    if not isinstance(x, _mycel.Tensor):
        raise not_tensor_error(name, "x" if name == "vector_norm" else "A", x)
    return x if dtype is None else _ops.cast(x, dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 (MindSpore's names)
    """The ord-norm of x over dim (every element if None): inf / -inf the largest / smallest |x|,
    0 the count of nonzeros, otherwise sum(|x|**ord)**(1/ord)."""
    x = _check("vector_norm", x, dtype)
    axes = vector_axes(ord, dim)
    a = _ops.abs(x)
    if ord == _INF:
        return _ops.max(a, axes, keepdim)
    if ord == -_INF:
        return _ops.min(a, axes, keepdim)
    if ord == 0:
        return _ops.sum(_ops.cast(_ops.not_equal(a, 0.0), a.dtype), axes, keepdim)
    if ord == 1:
        return _ops.sum(a, axes, keepdim)
    if ord == 2:
        return _ops.sqrt(_ops.sum(a * a, axes, keepdim))
    return _ops.pow(_ops.sum(_ops.pow(a, float(ord)), axes, keepdim), 1.0 / ord)


def _matrix_last(a, ord, keepdim):
    """matrix_norm over the last two dims of a (…, M, N)."""
    if ord == "fro":
        m = _ops.abs(a)
        return _ops.sqrt(_ops.sum(m * m, (-2, -1), keepdim))
    if ord == "nuc" or ord == 2 or ord == -2:
        s = _ops.svd(a, compute_uv=False)
        if ord == "nuc":
            r = _ops.sum(s, (-1,), False)
        elif ord == 2:
            r = _ops.max(s, (-1,), False)
        else:
            r = _ops.min(s, (-1,), False)
        return _ops.expand_dims(_ops.expand_dims(r, -1), -1) if keepdim else r
    if ord == 1 or ord == -1:  # column sums
        sums = _ops.sum(_ops.abs(a), (-2,), True)
    else:  # inf / -inf: row sums
        sums = _ops.sum(_ops.abs(a), (-1,), True)
    if ord == 1 or ord == _INF:
        return _ops.max(sums, (-2, -1), keepdim)
    return _ops.min(sums, (-2, -1), keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002,N803
    """The ord-norm of the matrices over the two dims `dim`: 'fro' (Frobenius), 'nuc' (sum of
    singular values), 2 / -2 (largest / smallest singular value), 1 / -1 (largest / smallest
    column sum of |a|), inf / -inf (largest / smallest row sum)."""
    A = _check("matrix_norm", A, dtype)
    perm, keep_axes = matrix_plan(ord, dim, A.shape)
    if perm is None:
        return _matrix_last(A, ord, keepdim)
    r = _matrix_last(_ops.transpose(A, perm), ord, False)
    if keepdim:
        for d in keep_axes:
            r = _ops.expand_dims(r, d)
    return r


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002,N803
    """A vector norm (dim an int, or A 1-d) or a matrix norm (dim two dims, or A 2-d), as
    numpy.linalg.norm; with ord and dim both None, the 2-norm of every element."""
    A = _check("norm", A, dtype)
    kind, dims = norm_kind(ord, dim, A.shape)
    if kind == "matrix":
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim)
