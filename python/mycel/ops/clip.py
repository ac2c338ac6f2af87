"""Gradient clipping by the global norm of a tuple of tensors (MindSpore's ops.clip_by_global_norm)."""
from mycel import _mycel
from mycel.common.tensor import Tensor
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops


def _global_norm(x):
    """sqrt of the sum of squares of every element of every tensor in x."""
    return _ops.sqrt(_ops.stack(tuple(_ops.sum(t * t) for t in x), 0).sum())


def clip_by_global_norm(x, clip_norm=1.0, use_norm=None):
    """Scales every tensor of `x` by clip_norm / max(global_norm, clip_norm), so the global L2 norm
    of the result is at most clip_norm (tensors are unchanged when it already is). `use_norm`
    replaces the computed global norm. Returns a tuple like `x`."""
    if not isinstance(x, (tuple, list)) or not x or not all(isinstance(t, _mycel.Tensor) for t in x):
        raise not_tensor_error("clip_by_global_norm", "x", x, "a non-empty tuple of Tensors")
    if isinstance(clip_norm, bool) or not isinstance(clip_norm, (int, float)) or not clip_norm > 0:
        raise ValueError(f"clip_by_global_norm: argument 'clip_norm' must be a float > 0, got {clip_norm!r}")
    if use_norm is None:
        norm = _global_norm(x)
    else:
        norm = use_norm if isinstance(use_norm, _mycel.Tensor) else Tensor(float(use_norm), dtype=x[0].dtype)
    scale = clip_norm / _ops.maximum(norm, float(clip_norm))
    return tuple(t * _ops.cast(scale, t.dtype) for t in x)
