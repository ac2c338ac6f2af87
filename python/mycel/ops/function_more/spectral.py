"""MindSpore's ops.stft over the registry's gather and fft: frames are gathered with a constant
index table, windowed, and transformed along their last axis (so gradients and graph mode come
with the registry ops)."""
import numpy as np

from mycel import _mycel
from mycel.common.dtype import complex64, complex128, float32, float64, int64
from mycel.common.tensor import Tensor

_ops = _mycel.ops

__all__ = ["stft"]


def _frame_index(length, n_fft, hop, center, pad_mode):
    """(n_frames, n_fft) positions into the signal, the reflect/constant padding of `center`
    folded in (-1: a zero of constant padding)."""
    pos = np.arange(length)
    if center:
        half = n_fft // 2
        if pad_mode == "REFLECT":
            if half >= length:
                raise ValueError(f"stft: reflect padding of {half} needs a signal longer than that, got {length}")
            pos = np.concatenate([pos[half:0:-1], pos, pos[-2:-half - 2:-1]])
        else:
            pos = np.concatenate([np.full(half, -1), pos, np.full(half, -1)])
    n_frames = 1 + (len(pos) - n_fft) // hop
    if n_frames < 1:
        raise ValueError(f"stft: n_fft {n_fft} is longer than the (padded) signal of {len(pos)} samples")
    starts = np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]
    return pos[starts]


def stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="REFLECT",
         normalized=False, onesided=None, return_complex=None):
    """Short-time Fourier transform of x (signal on the last axis): (..., n_freq, n_frames),
    complex, or with return_complex False its (real, imag) pairs on a last axis of 2. The window
    (ones of win_length by default) is centred in n_fft; onesided keeps n_fft // 2 + 1
    frequencies (the default for real x and window); normalized scales by 1 / sqrt(n_fft)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"stft: 'x' must be a Tensor, got {type(x).__name__}")
    if x.ndim not in (1, 2):
        raise ValueError(f"stft: 'x' must be 1-d or 2-d (batch, signal), got shape {tuple(x.shape)}")
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win_length = n_fft if win_length is None else int(win_length)
    if n_fft <= 0 or hop <= 0 or not 0 < win_length <= n_fft:
        raise ValueError(f"stft: needs n_fft > 0, hop_length > 0 and 0 < win_length <= n_fft, got n_fft={n_fft}, "
                         f"hop_length={hop}, win_length={win_length}")
    pad_mode = str(pad_mode).upper()
    if pad_mode not in ("REFLECT", "CONSTANT"):
        raise ValueError(f"stft: pad_mode must be 'REFLECT' or 'CONSTANT', got {pad_mode!r}")
    is_complex = x.dtype in (complex64, complex128) or (window is not None and window.dtype in (complex64, complex128))
    onesided = not is_complex if onesided is None else bool(onesided)
    return_complex = is_complex if return_complex is None else bool(return_complex)

    index = _frame_index(x.shape[-1], n_fft, hop, center, pad_mode)
    zero_pad = (index < 0).any()
    if zero_pad:  # constant padding: one zero appended to the signal, at index `length`
        x = _ops.concat((x, _ops.zeros(tuple(x.shape[:-1]) + (1,), x.dtype)), -1)
        index = np.where(index < 0, x.shape[-1] - 1, index)
    frames = _ops.gather(x, Tensor(index.astype(np.int64), dtype=int64), x.ndim - 1)  # (..., frames, n_fft)
    if window is None:
        window = _ops.ones((win_length,), float64 if x.dtype in (float64, complex128) else float32)
    if window.shape[0] != win_length:
        raise ValueError(f"stft: 'window' must have win_length {win_length} elements, got {window.shape[0]}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _ops.concat((_ops.zeros((left,), window.dtype), window,
                              _ops.zeros((n_fft - win_length - left,), window.dtype)), 0)
    spec = _ops.fft(frames * window, dim=-1)
    if onesided:
        spec = spec[..., :n_fft // 2 + 1]
    if normalized:
        spec = spec * (1.0 / np.sqrt(n_fft))
    spec = _ops.transpose(spec, tuple(range(spec.ndim - 2)) + (spec.ndim - 1, spec.ndim - 2))
    if return_complex:
        return spec
    return _ops.stack((_ops.real(spec), _ops.imag(spec)), -1)
