"""Hyper-parameter checks shared by the optimizers; messages name the optimizer and argument."""


def check_float(who, arg, value, low=None, high=None, low_inclusive=True, high_inclusive=True):
    """A Python number within [low, high] (bounds optional); returns it as float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{who}: argument '{arg}' must be a float, got {type(value).__name__} {value!r}")
    value = float(value)
    bad_low = low is not None and (value < low if low_inclusive else value <= low)
    bad_high = high is not None and (value > high if high_inclusive else value >= high)
    if bad_low or bad_high:
        lo = "" if low is None else ("[" if low_inclusive else "(") + str(low)
        hi = "" if high is None else str(high) + ("]" if high_inclusive else ")")
        rng = f"in {lo}, {hi}" if low is not None and high is not None else (
            f"{'>=' if low_inclusive else '>'} {low}" if low is not None else f"{'<=' if high_inclusive else '<'} {high}")
        raise ValueError(f"{who}: argument '{arg}' must be {rng}, got {value}")
    return value


def check_bool(who, arg, value):
    if not isinstance(value, bool):
        raise TypeError(f"{who}: argument '{arg}' must be a bool, got {type(value).__name__} {value!r}")
    return value
