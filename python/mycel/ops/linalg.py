"""MindSpore's functional linear algebra made of registry ops: the spellings that differ from the
ops' own (ops.qr's `mode`, the older matrix_determinant names) and the composites pinv,
matrix_power and cholesky_inverse. Plain Python, so graph mode parses them like user code and
their gradients come from the ops they call."""
from mycel import _mycel
from mycel.common.dtype import complex128, float64
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops


def qr(input, mode='reduced'):  # noqa: A002 (MindSpore's argument name)
    """(Q, R) with input = Q R: mode 'reduced' (Q: M x K, R: K x N, K = min(M, N)) or 'complete'
    (Q: M x M, R: M x N)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("qr", "input", input)
    if mode not in ('reduced', 'complete'):
        raise ValueError("[qr] mode must be 'reduced' or 'complete', got '" + str(mode) + "'")
    return _ops.qr(input, full_matrices=mode == 'complete')


def _with_example(fn, name):
    """Appends the op table's runnable example (ops/_examples.py) to fn's help text, as the
    registry's functional forms carry theirs (tests/python/test_op_examples.py runs it)."""
    from mycel.ops._examples import EXAMPLES
    if name in EXAMPLES:
        fn.__doc__ += "\n\nExample:\n" + "\n".join("    " + line for line in EXAMPLES[name].splitlines()) + "\n"
    return fn


_with_example(qr, "qr")


def matrix_determinant(input):  # noqa: A002
    """Determinants of square matrices (MindSpore's older name of ops.det)."""
    return _ops.det(input)


def log_matrix_determinant(input):  # noqa: A002
    """(sign, log|det|) of square matrices (MindSpore's older name of ops.slogdet)."""
    return _ops.slogdet(input)


def _transpose_last(x):
    perm = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return _ops.transpose(x, perm)


def _adjoint(x):
    """The conjugate transpose of the last two dims (the transpose of a real matrix)."""
    return _ops.conj(_transpose_last(x))


def _eps(x):
    """Machine epsilon of x's real precision."""
    if x.dtype == float64 or x.dtype == complex128:
        return 2.220446049250313e-16
    return 1.1920928955078125e-07


def pinv(x, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse of matrices (..., M, N) from their SVD (eigh when
    hermitian): singular values at or below max(atol, rtol * the largest) count as zero;
    rtol defaults to eps * max(M, N) when neither tolerance is given (MindSpore's and NumPy's)."""
    if not isinstance(x, _mycel.Tensor):
        raise not_tensor_error("pinv", "x", x)
    m, n = x.shape[-2], x.shape[-1]
    if rtol is None:
        rtol = _eps(x) * max(m, n) if atol is None else 0.0
    if atol is None:
        atol = 0.0
    if hermitian:
        w, v = _ops.eigh(x)
        s, u = _ops.abs(w), v * _ops.expand_dims(_ops.sign(w), -2)  # A = (V sign(w)) |w| V^H
    else:
        s, u, v = _ops.svd(x)
    limit = _ops.maximum(_ops.max(s, (-1,), True) * rtol, _ops.zeros_like(s) + atol)
    keep = s > limit
    safe = _ops.select(keep, s, _ops.ones_like(s))
    inv = _ops.select(keep, _ops.reciprocal(safe), _ops.zeros_like(s))
    return _ops.matmul(v * _ops.expand_dims(inv, -2), _adjoint(u))


def matrix_power(input, n):  # noqa: A002
    """input multiplied by itself n times (n an int; 0 gives the identity, a negative n powers
    the inverse), by repeated squaring."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("matrix_power", "input", input)
    if not isinstance(n, int):
        raise TypeError("[matrix_power] n must be an int, got " + str(n))
    if len(input.shape) < 2 or input.shape[-1] != input.shape[-2]:
        raise ValueError("[matrix_power] input must be square (..., N, N), got shape " + str(input.shape))
    size = input.shape[-1]
    result = _ops.zeros_like(input) + _ops.cast(_ops.eye(size, size), input.dtype)
    base = _ops.inverse(input) if n < 0 else input
    k = -n if n < 0 else n
    while k > 0:
        if k % 2 == 1:
            result = _ops.matmul(result, base)
        k = k // 2
        if k > 0:
            base = _ops.matmul(base, base)
    return result


def cholesky_inverse(input_x, upper=False):
    """The inverse of A = L L^H (U^H U when upper) from its Cholesky factor input_x."""
    if not isinstance(input_x, _mycel.Tensor):
        raise not_tensor_error("cholesky_inverse", "input_x", input_x)
    size = input_x.shape[-1]
    eye = _ops.zeros_like(input_x) + _ops.cast(_ops.eye(size, size), input_x.dtype)
    return _ops.cholesky_solve(eye, input_x, upper=upper)


# The norms (ops/norms.py) under linalg too, as torch.linalg and numpy.linalg name them.
from mycel.ops.norms import norm, matrix_norm, vector_norm  # noqa: E402,F401

