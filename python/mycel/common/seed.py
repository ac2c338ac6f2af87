"""Global random seed (mycel.set_seed), read by random ops and initializers.

Random ops draw from one counter-based Philox4x32-10 generator whose state is (seed, offset).
set_seed(s) resets both, so the draws that follow are the same on every run and for any thread
count. An op given a nonzero `seed`/`seed2` attribute uses its own stream instead, which gives the
same numbers on every call.
"""
from mycel import _mycel

_seed = None


def set_seed(seed):
    """Seeds every random op: the same seed gives the same sequence of draws."""
    global _seed
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"set_seed: seed must be an int in [0, 2**64), got {seed!r}")
    _seed = seed
    if hasattr(_mycel, "set_seed"):
        _mycel.set_seed(seed)


def get_seed():
    """The seed given to set_seed, or None."""
    return _seed


def get_rng_state():
    """The global generator's state (seed, offset), for set_rng_state."""
    return tuple(_mycel.get_rng_state())


def set_rng_state(state):
    """Restores a state from get_rng_state: the draws that followed it repeat."""
    seed, offset = state
    _mycel.set_rng_state(seed, offset)
