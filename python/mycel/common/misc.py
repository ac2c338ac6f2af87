"""Small MindSpore top-level helpers: lazy_inline, is_tensor, from_numpy."""
import functools

import numpy as np


def lazy_inline(fn=None, attrs=None, policy=None):
    """MindSpore's @lazy_inline on a Cell's __init__: a hint that lets MindSpore compile a Cell
    reused many times (a transformer's layers) once and call it. Mycel's compiler already builds
    one graph per construct and specializes it per call site, so the hint changes nothing here
    and the decorated __init__ runs unchanged; attrs and policy are accepted and checked."""
    if attrs is not None and not isinstance(attrs, (str, list, tuple)):
        raise TypeError(f"lazy_inline: attrs must be a str or a list of str, got {type(attrs).__name__}")
    if policy not in (None, "front"):
        raise ValueError(f"lazy_inline: policy must be None or 'front', got {policy!r}")

    def wrap(init):
        if not callable(init):
            raise TypeError(f"lazy_inline decorates a Cell's __init__, got {type(init).__name__}")

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
        return __init__
    return wrap if fn is None else wrap(fn)


def is_tensor(obj):
    """Whether obj is a mycel Tensor (a Parameter is one)."""
    from mycel.common.tensor import Tensor
    return isinstance(obj, Tensor)


def from_numpy(array):
    """A Tensor of a numpy array, sharing its memory when the array is C-contiguous, aligned and
    of a supported dtype (MindSpore's from_numpy), else a copy."""
    from mycel.common.tensor import Tensor, from_dlpack
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    if array.flags.c_contiguous and array.flags.aligned and array.flags.writeable:
        try:
            return from_dlpack(array)
        except (TypeError, ValueError, RuntimeError, BufferError):
            pass  # a dtype DLPack or Mycel does not take: copy below
    return Tensor(np.ascontiguousarray(array))
