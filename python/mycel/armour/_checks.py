"""Argument checks shared by the armour classes: each error names the class, the argument, what
was expected and what was given (MindArmour raises ValueError/TypeError the same way)."""
import numbers

import numpy as np


def check_number(owner, name, value, *, lo=None, hi=None, lo_open=False, hi_open=False, integer=False):
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        want = "an int" if integer else "a number"
        raise TypeError(f"{owner}: {name} must be {want}, got {type(value).__name__} {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{owner}: {name} must be finite, got {value!r}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ValueError(f"{owner}: {name} must be {'>' if lo_open else '>='} {lo}, got {value!r}")
    if hi is not None and (value > hi or (hi_open and value == hi)):
        raise ValueError(f"{owner}: {name} must be {'<' if hi_open else '<='} {hi}, got {value!r}")
    return value


def check_bounds(owner, bounds, allow_none=True):
    if bounds is None:
        if allow_none:
            return None
        raise ValueError(f"{owner}: bounds must be a (min, max) pair, got None")
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"{owner}: bounds must be a (min, max) pair, got {bounds!r}")
    lo = check_number(owner, "bounds[0]", bounds[0])
    hi = check_number(owner, "bounds[1]", bounds[1])
    if not lo < hi:
        raise ValueError(f"{owner}: bounds must have min < max, got {bounds!r}")
    return float(lo), float(hi)


def check_norm_level(owner, norm_level, allowed=(1, 2, "inf")):
    """1, 2, np.inf, 'l1', 'l2', 'inf', 'linf' -> 1, 2 or 'inf'."""
    key = norm_level
    if isinstance(key, str):
        key = {"1": 1, "l1": 1, "2": 2, "l2": 2, "inf": "inf", "linf": "inf", "np.inf": "inf"}.get(key.lower())
    elif isinstance(key, numbers.Real) and not isinstance(key, bool):
        key = "inf" if key == np.inf else (int(key) if key in (1, 2) else None)
    else:
        key = None
    if key is None or key not in allowed:
        raise ValueError(f"{owner}: norm_level must be one of {list(allowed)}, got {norm_level!r}")
    return key


def as_inputs(owner, inputs):
    x = np.asarray(inputs)
    if x.dtype.kind not in "fiu" or x.ndim < 1 or x.shape[0] == 0:
        raise ValueError(f"{owner}: inputs must be a non-empty numeric array with a batch axis, got "
                         f"dtype {x.dtype} shape {x.shape}")
    return x.astype(np.float32)


def as_onehot(owner, labels, batch, num_classes, name="labels"):
    """Sparse (N,) integer labels or (N, K) one-hot rows -> float32 (N, K) one-hot."""
    y = np.asarray(labels)
    if y.ndim == 1:
        if y.dtype.kind not in "iu":
            raise ValueError(f"{owner}: sparse {name} must be integers, got dtype {y.dtype}")
        if y.shape[0] != batch:
            raise ValueError(f"{owner}: {name} must have one entry per input ({batch}), got shape {y.shape}")
        if y.size and (y.min() < 0 or y.max() >= num_classes):
            raise ValueError(f"{owner}: {name} must lie in [0, {num_classes}), got values in "
                             f"[{y.min()}, {y.max()}]")
        return np.eye(num_classes, dtype=np.float32)[y]
    if y.ndim == 2:
        if y.shape != (batch, num_classes):
            raise ValueError(f"{owner}: one-hot {name} must have shape {(batch, num_classes)}, got {y.shape}")
        return y.astype(np.float32)
    raise ValueError(f"{owner}: {name} must be sparse (N,) or one-hot (N, classes), got shape {y.shape}")
