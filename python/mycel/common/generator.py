"""MindSpore's generator API (mindspore.Generator, default_generator, manual_seed, seed,
initial_seed, get_rng_state, set_rng_state). Random ops draw from one global counter-based
generator whose state is (seed, offset) (common/seed.py); `default_generator` is that generator.
Another Generator holds a state of its own, which get_state/set_state/manual_seed act on; the
random ops take no `generator` argument, so they always draw from the default one."""
import random as _random

import numpy as np

from mycel import _mycel
from mycel.common import seed as _seed

_MAX_SEED = 2 ** 64


def _check_seed(who, seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < _MAX_SEED:
        raise ValueError(f"{who}: seed must be an int in [0, 2**64), got {seed!r}")
    return int(seed)


def _state_tensor(seed, offset):
    from mycel.common.tensor import Tensor
    # uint64 seeds fit int64 bit for bit; the tensor round-trips through set_state.
    return Tensor(np.array([seed, offset], np.uint64).view(np.int64))


def _state_values(who, state):
    a = np.asarray(state.asnumpy() if hasattr(state, "asnumpy") else state)
    if a.shape != (2,) or a.dtype.kind not in "iu":
        raise ValueError(f"{who}: state must be an integer tensor of shape (2,) from get_state, "
                         f"got {a.dtype} of shape {a.shape}")
    seed, offset = (int(v) for v in a.astype(np.int64).view(np.uint64))
    return seed, offset


class Generator:
    """A random generator's state: seed and offset (the count of draws made)."""

    def __init__(self):
        self._seed, self._offset, self._initial = 0, 0, 0

    def get_state(self):
        """The state as an int64 Tensor [seed, offset], for set_state."""
        return _state_tensor(*self._get())

    def set_state(self, state):
        """Restores a state from get_state: the draws that followed it repeat."""
        self._set(*_state_values("Generator.set_state", state))

    def manual_seed(self, seed):
        """Seeds the generator (offset 0); returns it."""
        seed = _check_seed("Generator.manual_seed", seed)
        self._initial = seed
        self._set(seed, 0)
        return self

    def seed(self):
        """Seeds the generator from a nondeterministic source; returns that seed."""
        s = _random.SystemRandom().randrange(_MAX_SEED)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed last given by manual_seed or seed."""
        return self._initial

    def _get(self):
        return self._seed, self._offset

    def _set(self, seed, offset):
        self._seed, self._offset = seed, offset


class _DefaultGenerator(Generator):
    """The global generator the random ops draw from."""

    def __init__(self):
        super().__init__()

    def _get(self):
        return tuple(int(v) for v in _mycel.get_rng_state())

    def _set(self, seed, offset):
        _mycel.set_rng_state(seed, offset)

    def manual_seed(self, seed):
        _seed.set_seed(_check_seed("manual_seed", seed))  # mycel.get_seed() follows
        self._initial = int(seed)
        return self

    def initial_seed(self):
        return _seed.get_seed() if _seed.get_seed() is not None else self._initial


default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seeds the default generator (the random ops' draws then repeat from run to run)."""
    default_generator.manual_seed(seed)


def seed():
    """Seeds the default generator from a nondeterministic source; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state, an int64 Tensor [seed, offset]."""
    return default_generator.get_state()


def set_rng_state(state):
    """Restores the default generator's state from get_rng_state."""
    default_generator.set_state(state)
