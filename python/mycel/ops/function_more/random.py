"""MindSpore 2.x's random functions over the registry samplers (one Philox stream: the default
generator; a nonzero seed gives the op its own repeatable stream): rand, randn, rand_like,
randn_like, randint_like, randperm, standard_normal, laplace, shuffle, gumbel_softmax."""
from mycel import _mycel
from mycel.common.dtype import float32, int64
from mycel.ops.function_more._base import _axis

_ops = _mycel.ops


def _shape(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


def _seed(seed):
    return 0 if seed is None else int(seed)


def rand(*size, dtype=None, seed=None):
    """Uniform draws on [0, 1) of the given size."""
    return _ops.uniform(_shape(size), 0.0, 1.0, _seed(seed), dtype or float32)


def randn(*size, dtype=None, seed=None):
    """Standard normal draws of the given size."""
    return _ops.normal(_shape(size), 0.0, 1.0, _seed(seed), dtype or float32)


def rand_like(input, seed=None, *, dtype=None):
    """Uniform draws on [0, 1) shaped like input."""
    return _ops.uniform(tuple(input.shape), 0.0, 1.0, _seed(seed), dtype or input.dtype)


def randn_like(input, seed=None, *, dtype=None):
    """Standard normal draws shaped like input."""
    return _ops.normal(tuple(input.shape), 0.0, 1.0, _seed(seed), dtype or input.dtype)


def randint_like(input, low, high, seed=None, *, dtype=None):
    """Integers uniform on [low, high) shaped like input."""
    return _ops.randint(int(low), int(high), tuple(input.shape), _seed(seed), dtype or int64)


def standard_normal(shape, seed=0, seed2=0):
    """Standard normal draws of `shape`."""
    return _ops.normal(tuple(shape), 0.0, 1.0, int(seed), float32, int(seed2))


def randperm(n, seed=0, offset=0, dtype=int64):
    """A random permutation of 0 .. n-1 (the order of n uniform keys)."""
    if isinstance(n, bool) or int(n) < 0:
        raise ValueError(f"randperm: n must be an int >= 0, got {n!r}")
    keys = _ops.uniform((int(n),), 0.0, 1.0, int(seed), float32)
    return _ops.cast(_ops.argsort(keys), dtype) + offset


def laplace(shape, mean, lambda_param, seed=None):
    """Laplace(mean, lambda_param) draws: mean - b sign(u) log(1 - 2|u|), u uniform on (-1/2, 1/2)."""
    u = _ops.uniform(tuple(shape), -0.5, 0.5, _seed(seed), float32)
    return mean - lambda_param * _ops.sign(u) * _ops.log1p(-2.0 * _ops.abs(u))


def shuffle(x, seed=None, seed2=0):
    """x with its first dimension randomly permuted (a 0-d x is itself); seed None or an int
    >= 0 (MindSpore's checks: TypeError for another type, ValueError if negative), seed2 the
    second seed of P.RandomShuffle."""
    if not isinstance(x, _mycel.Tensor):
        raise TypeError(f"shuffle: x must be a Tensor, got {type(x).__name__}")
    for name, s in (("seed", seed), ("seed2", seed2)):
        if s is not None and (isinstance(s, bool) or not isinstance(s, int)):
            raise TypeError(f"shuffle: {name} must be an int, got {s!r}")
        if s is not None and s < 0:
            raise ValueError(f"shuffle: {name} must be >= 0, got {s}")
    if x.ndim == 0:
        return x
    keys = _ops.uniform((x.shape[0],), 0.0, 1.0, _seed(seed), float32, int(seed2))
    return _ops.gather(x, _ops.argsort(keys), 0)


def gumbel_softmax(logits, tau=1.0, hard=False, dim=-1):
    """softmax((logits + g) / tau) with g Gumbel(0, 1) noise; hard returns the one-hot argmax in
    the forward pass and the soft sample's gradient (straight-through)."""
    if tau <= 0:
        raise ValueError(f"gumbel_softmax: tau must be > 0, got {tau!r}")
    u = _ops.uniform(tuple(logits.shape), 1e-20, 1.0, 0, logits.dtype)
    g = -_ops.log(-_ops.log(u))
    y = _ops.softmax((logits + g) / tau, dim)
    if not hard:
        return y
    d = _axis(y, dim)
    index = _ops.argmax(y, d, True)
    one_hot = _ops.cast(_ops.equal(_ops.arange(y.shape[d], dtype=int64).reshape(
        tuple(y.shape[d] if k == d else 1 for k in range(y.ndim))), index), y.dtype)
    return one_hot - _ops.stop_gradient(y) + y


__all__ = ["rand", "randn", "rand_like", "randn_like", "randint_like", "standard_normal", "randperm",
           "laplace", "shuffle", "gumbel_softmax"]
