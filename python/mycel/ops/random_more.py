"""MindSpore's functional forms of the sampled distributions (registry ops random_gamma,
random_poisson, standard_laplace, random_categorical, multinomial; ops/random_dist.cc; and
binomial, random_beta, log_normal, exponential, truncated_normal; ops/random_more.cc) in its
argument order, and ops.gamma / ops.poisson / ops.beta built on them. seed None or 0 draws from the global
generator (mycel.set_seed); another seed restarts the op's own stream at every call."""
import numpy as np

from mycel import _mycel
from mycel.common import dtype as mstype
from mycel.common.index_geometry import broadcast_shape
from mycel.common.validator import not_tensor_error
from mycel.ops.operations import Primitive

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
    if isinstance(shape, _mycel.Tensor):  # MindSpore 2.x passes the shape as a 1-d int tensor
        if shape.dtype not in (mstype.int32, mstype.int64):
            raise TypeError(f"[random_poisson] argument 'shape' as a Tensor must be int32 or int64, got {shape.dtype}")
        if shape.ndim != 1:
            raise ValueError(f"[random_poisson] argument 'shape' as a Tensor must be 1-d, got shape {shape.shape}")
        shape = shape.asnumpy().tolist()
    if rate.dtype in (mstype.int32, mstype.int64):  # MindSpore takes integer rates; sample in float
        rate = rate.astype(mstype.float64 if rate.dtype == mstype.int64 else mstype.float32)
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


def multinomial_with_replacement(x, seed, offset, numsamples, replacement=False):
    """numsamples int64 indices per row of x (weights, 1-d or 2-d) from the Philox stream keyed by
    seed starting at offset (ints or one-element int tensors; seed -1 with offset 0 draws from
    the global generator): MindSpore's ops.multinomial_with_replacement."""
    if not isinstance(x, _mycel.Tensor):
        raise not_tensor_error("multinomial_with_replacement", "x", x)
    args = []
    for name, v in (("seed", seed), ("offset", offset)):
        if not isinstance(v, _mycel.Tensor):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"multinomial_with_replacement: {name} must be an int or a Tensor, "
                                f"got {type(v).__name__}")
            v = _mycel.Tensor(np.array([v], np.int64))
        args.append(v)
    return _ops.multinomial_with_replacement(x, *args, numsamples=numsamples, replacement=replacement)


def _broadcast_pair(name, a, b, names):
    """a and b broadcast to one shape (the registry ops take parameters of one shape)."""
    for n, t in zip(names, (a, b)):
        if not isinstance(t, _mycel.Tensor):
            raise not_tensor_error(name, n, t)
    shape = broadcast_shape(a.shape, b.shape, name)
    a = a if tuple(a.shape) == shape else _ops.broadcast_to(a, shape)
    b = b if tuple(b.shape) == shape else _ops.broadcast_to(b, shape)
    return a, b


def binomial(count, probs, seed=0, seed2=0):
    """Binomial(count, probs) samples (successes in count trials with success probability
    probs), count and probs broadcast together, in count's float dtype (torch.binomial)."""
    count, probs = _broadcast_pair("binomial", count, probs, ("count", "probs"))
    return _ops.binomial(count, probs, seed=_seed(seed), seed2=seed2)


def random_beta(shape, alpha, beta, seed=0, seed2=0):
    """Beta(alpha, beta) samples of shape shape + broadcast(alpha, beta).shape, alpha's dtype (the
    argument order of random_gamma)."""
    alpha, beta = _broadcast_pair("random_beta", alpha, beta, ("alpha", "beta"))
    return _ops.random_beta(alpha, beta, shape=tuple(shape), seed=_seed(seed), seed2=seed2)


def beta(shape, alpha, beta, seed=None):  # noqa: F811 (MindSpore's argument name)
    """Beta(alpha, beta) samples shaped as shape, alpha and beta broadcast together (the form of
    ops.gamma)."""
    a, b = _broadcast_pair("beta", alpha, beta, ("alpha", "beta"))
    ones = _ops.ones(tuple(shape), a.dtype)
    return _ops.random_beta(ones * a, ones * b, shape=(), seed=_seed(seed))


def log_normal(input, mean=1.0, std=2.0, seed=0, seed2=0):  # noqa: A002 (MindSpore's name)
    """exp(N(mean, std^2)) samples with the shape and dtype of input (Tensor.log_normal,
    MindSpore's LogNormalReverse)."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("log_normal", "input", input)
    return _ops.log_normal(input, mean=float(mean), std=float(std), seed=_seed(seed), seed2=seed2)


def exponential(input, lambd=1.0, seed=0, seed2=0):  # noqa: A002
    """Exp(lambd) samples (density lambd e^(-lambd x)) with the shape and dtype of input."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("exponential", "input", input)
    return _ops.exponential(input, lambd=float(lambd), seed=_seed(seed), seed2=seed2)


def _shape_tuple(prim, shape):
    """A shape given as a tuple, list or 1-d int Tensor (MindSpore's primitives take a Tensor)."""
    if isinstance(shape, _mycel.Tensor):
        if len(shape.shape) != 1 or shape.dtype not in (mstype.int32, mstype.int64):
            raise TypeError(f"{prim}: shape must be a 1-d int32/int64 Tensor or a tuple, got "
                            f"shape {shape.shape} dtype {shape.dtype}")
        return tuple(int(v) for v in shape.asnumpy())
    return tuple(shape)


class TruncatedNormal(Primitive):
    """MindSpore's TruncatedNormal(seed=0, seed2=0, dtype=float32), called with the output shape
    (a tuple, or a 1-d int Tensor in PyNative mode): N(0, 1) samples within [-2, 2]."""

    def __init__(self, seed=0, seed2=0, dtype=mstype.float32):
        Primitive.__init__(self, "TruncatedNormal")
        self._one = _mycel.op_handles["truncated_normal"].bind(seed=seed, seed2=seed2, dtype=dtype)
        for k, v in (("seed", seed), ("seed2", seed2), ("dtype", dtype)):
            self.add_prim_attr(k, v)

    def __call__(self, shape):
        return self._one(_shape_tuple("TruncatedNormal", shape))

    @property
    def _mycel_graph_function(self):
        one = self._one

        def truncated_normal(shape):
            return one(shape)
        return truncated_normal


def exponential_(self, lambd=1, *, generator=None):
    """Tensor.exponential_: fills the tensor in place with Exp(lambd) samples (PyNative)."""
    if generator is not None:
        raise NotImplementedError("Tensor.exponential_: generator is not supported; use mycel.set_seed")
    self._assign(exponential(self, lambd))
    return self


def _install():
    _mycel.Tensor.log_normal = log_normal
    _mycel.Tensor.exponential_ = exponential_


_install()
