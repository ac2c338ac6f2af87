"""Gradient rows for the FFT ops on float64 input (the rules' complex-input cases are checked in
compat/test_fft.py): a complex output's check reads its real part against a real cotangent."""
from . import GradCase

CASES = [
    GradCase("fft", [(3, 8)]),
    GradCase("fft", [(3, 5)], dict(n=7, dim=0, norm="ortho"), id="n_dim"),
    GradCase("ifft", [(4, 6)], dict(n=4, norm="forward"), id="crop"),
    GradCase("fft2", [(2, 3, 5)], dict(s=(4, 4), dim=(0, 2)), id="s"),
    GradCase("ifft2", [(2, 3, 5)]),
    GradCase("fftn", [(2, 3, 5)]),
    GradCase("ifftn", [(2, 3, 5)], dict(s=(2, 7), norm="ortho"), id="s"),
    GradCase("rfft", [(3, 9)]),
    GradCase("rfft", [(3, 6)], dict(n=4), id="crop"),
    GradCase("irfft", [(3, 5)], dict(n=9)),
    GradCase("irfft", [(3, 5)], dict(n=6, norm="ortho"), id="even"),
    GradCase("rfft2", [(2, 4, 6)]),
    GradCase("irfft2", [(2, 4, 4)]),
    GradCase("rfftn", [(2, 3, 6)], dict(norm="forward")),
    GradCase("irfftn", [(2, 3, 4)], dict(s=(3, 5))),
    GradCase("fftshift", [(3, 4)]),
    GradCase("ifftshift", [(3, 5, 2)], dict(dim=(-2, 0))),
]
