"""MindSpore's hfft/hfft2/hfftn and ihfft/ihfft2/ihfftn (a Hermitian-symmetric signal's transforms, numpy's definitions)
made of rfft/irfft and conj: plain Python, so graph mode parses them and gradients come from the
ops they call."""
from mycel import _mycel
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops


def _swap(norm):
    """The norm of the opposite direction (hfft is irfft of the conjugate with it)."""
    if norm is None or norm == "backward":
        return "forward"
    if norm == "forward":
        return "backward"
    return norm


def hfft(input, n=None, dim=-1, norm=None):  # noqa: A002 (MindSpore's argument name)
    """The real spectrum of a signal whose half (n // 2 + 1 values along dim) is given, the rest
    being its Hermitian mirror: irfft(conj(input)) with the opposite norm (numpy.fft.hfft)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("hfft", "input", input)
    return _ops.irfft(_ops.conj(input), n=n, dim=dim, norm=_swap(norm))


def ihfft(input, n=None, dim=-1, norm=None):  # noqa: A002
    """The inverse of hfft: conj(rfft(input)) with the opposite norm (numpy.fft.ihfft)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("ihfft", "input", input)
    return _ops.conj(_ops.rfft(input, n=n, dim=dim, norm=_swap(norm)))


def hfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """hfftn over the two dims `dim` (scipy.fft.hfft2)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("hfft2", "input", input)
    return _ops.irfft2(_ops.conj(input), s=s, dim=dim, norm=_swap(norm))


def hfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The real n-d spectrum of a Hermitian-symmetric signal given by its half along the last of
    `dim`: irfftn(conj(input)) with the opposite norm (scipy.fft.hfftn)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("hfftn", "input", input)
    return _ops.irfftn(_ops.conj(input), s=s, dim=dim, norm=_swap(norm))


def ihfft2(input, s=None, dim=(-2, -1), norm=None):  # noqa: A002
    """ihfftn over the two dims `dim` (scipy.fft.ihfft2)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("ihfft2", "input", input)
    return _ops.conj(_ops.rfft2(input, s=s, dim=dim, norm=_swap(norm)))


def ihfftn(input, s=None, dim=None, norm=None):  # noqa: A002
    """The inverse of hfftn: conj(rfftn(input)) with the opposite norm (scipy.fft.ihfftn)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("ihfftn", "input", input)
    return _ops.conj(_ops.rfftn(input, s=s, dim=dim, norm=_swap(norm)))
