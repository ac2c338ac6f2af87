"""A mechanism's own random stream. Mycel's random ops draw from the global Philox generator
(state: key, offset); an op-level seed would restart its stream at every call and repeat the same
noise each step. So a seeded mechanism keeps its own (key, offset) and swaps it in while its draws
run: inside `with gen:` every random op continues the mechanism's stream, and on exit the global
generator continues exactly where it was, as if the mechanism had not drawn."""
from mycel.common.seed import get_rng_state, set_rng_state

_MASK = (1 << 64) - 1


def _splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class OwnGenerator:
    """The stream of one seeded mechanism; re-entering the active generator is a no-op."""

    def __init__(self, seed):
        # a key of its own: not the stream of set_seed(seed) nor of an op seeded with seed
        self.state = (_splitmix64(_splitmix64(seed) ^ 0x61726D6F7572), 0)
        self._saved = []

    def __enter__(self):
        self._saved.append(None if self._saved else get_rng_state())
        if len(self._saved) == 1:
            set_rng_state(self.state)
        return self

    def __exit__(self, *exc):
        outer = self._saved.pop()
        if not self._saved:
            self.state = get_rng_state()
            set_rng_state(outer)
        return False


def own_generator(seed):
    """None for seed 0 (draw from the global generator, as MindArmour's seed=0), else an OwnGenerator."""
    return OwnGenerator(seed) if seed else None
