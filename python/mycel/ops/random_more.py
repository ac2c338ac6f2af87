"""MindSpore's functional forms of the sampled distributions (registry ops random_gamma,
random_poisson, standard_laplace, random_categorical, multinomial; ops/random_dist.cc) in its
argument order, and ops.gamma / ops.poisson built on them. seed None or 0 draws from the global
generator (mycel.set_seed); another seed restarts the op's own stream at every call."""
from mycel import _mycel
from mycel.common import dtype as mstype
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops


def _seed(seed):
    return 0 if seed is None else seed


def standard_laplace(shape, seed=None, seed2=0, *, dtype=mstype.float32):
    """Laplace(0, 1) samples of `shape`."""
    return _ops.standard_laplace(shape=tuple(shape), dtype=dtype, seed=_seed(seed), seed2=seed2)


def random_gamma(shape, alpha, seed=0, seed2=0):
    """Gamma(alpha, 1) samples of shape shape + alpha.shape, alpha's dtype."""
    if not isinstance(alpha, _mycel.Tensor):
        raise not_tensor_error("random_gamma", "alpha", alpha)
    return _ops.random_gamma(alpha, shape=tuple(shape), seed=_seed(seed), seed2=seed2)


def gamma(shape, alpha, beta, seed=None):
    """Samples with density x^(alpha-1) e^(-x/beta) / (beta^alpha Gamma(alpha)) (beta a scale, as
    MindSpore's Gamma), shaped as shape, alpha and beta broadcast together."""
    for name, t in (("alpha", alpha), ("beta", beta)):
        if not isinstance(t, _mycel.Tensor):
            raise not_tensor_error("gamma", name, t)
    ones = _ops.ones(tuple(shape), alpha.dtype)
    a = ones * alpha * _ops.ones_like(beta)
    return _ops.random_gamma(a, shape=(), seed=_seed(seed)) * beta


def random_poisson(shape, rate, seed=0, seed2=0, dtype=mstype.float32):
    """Poisson(rate) samples of shape shape + rate.shape."""
    if not isinstance(rate, _mycel.Tensor):
        raise not_tensor_error("random_poisson", "rate", rate)
    return _ops.random_poisson(rate, shape=tuple(shape), dtype=dtype, seed=_seed(seed), seed2=seed2)


def poisson(shape, mean, seed=None):
    """Poisson(mean) samples as int32, shaped as shape and mean broadcast together (MindSpore's
    older ops.poisson)."""
    if not isinstance(mean, _mycel.Tensor):
        raise not_tensor_error("poisson", "mean", mean)
    m = _ops.ones(tuple(shape), mean.dtype) * mean
    return _ops.random_poisson(m, shape=(), dtype=mstype.int32, seed=_seed(seed))


def random_categorical(logits, num_sample, seed=0, dtype=mstype.int64):
    """num_sample class indices per row of logits (batch, classes), drawn from softmax(logits)."""
    if not isinstance(logits, _mycel.Tensor):
        raise not_tensor_error("random_categorical", "logits", logits)
    return _ops.random_categorical(logits, num_sample=num_sample, dtype=dtype, seed=_seed(seed))


def multinomial(input, num_samples, replacement=True, seed=None):  # noqa: A002 (MindSpore's name)
    """num_samples indices per row of input (weights, 1-d or 2-d), int32, drawn with probability
    proportional to the weights, with or without replacement."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("multinomial", "input", input)
    return _ops.multinomial(input, num_samples=num_samples, replacement=replacement, seed=_seed(seed))
