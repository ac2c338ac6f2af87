"""MindSpore's functional linear-algebra spellings that differ from the registry ops' own
(ops.qr's `mode`, the older matrix_determinant names). Plain Python over registry ops, so graph
mode parses them like user code and their gradients come from the ops they call."""
from mycel import _mycel
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


def matrix_determinant(input):  # noqa: A002
    """Determinants of square matrices (MindSpore's older name of ops.det)."""
    return _ops.det(input)


def log_matrix_determinant(input):  # noqa: A002
    """(sign, log|det|) of square matrices (MindSpore's older name of ops.slogdet)."""
    return _ops.slogdet(input)
