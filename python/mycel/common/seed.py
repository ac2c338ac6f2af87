"""Global random seed (mycel.set_seed), read by random ops and initializers."""
from mycel import _mycel

_seed = None


def set_seed(seed):
    """Seeds every random op: the same seed gives the same sequence of draws."""
    global _seed
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"set_seed: seed must be a non-negative int, got {seed!r}")
    _seed = seed
    if hasattr(_mycel, "set_seed"):
        _mycel.set_seed(seed)


def get_seed():
    """The seed given to set_seed, or None."""
    return _seed
