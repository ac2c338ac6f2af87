"""MindSpore's random primitive classes that take the sample shape as a call input (the registry
ops take it as an attribute): RandomGamma, RandomPoisson, StandardLaplace,
ParameterizedTruncatedNormal, NonDeterministicInts, and the candidate samplers
(UniformCandidateSampler, LogUniformCandidateSampler: registry op candidate_sampler, ops/
random_more.cc) with their functional forms. Each class is callable eagerly and in graph mode
(`_mycel_graph_function`: the registry op with the shape folded to a constant)."""
from mycel import _mycel
from mycel.common import dtype as mstype
from mycel.common.validator import not_tensor_error
from mycel.ops.operations import Primitive
from mycel.ops.random_more import _shape_tuple

_handles = _mycel.op_handles


def _check_int(prim, name, v, lo):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{prim}: '{name}' must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{prim}: '{name}' must be >= {lo}, got {v}")
    return v


def _check_bool(prim, name, v):
    if not isinstance(v, bool):
        raise TypeError(f"{prim}: '{name}' must be a bool, got {type(v).__name__}")
    return v


class _ShapeFirst(Primitive):
    """A random primitive called with (shape, *tensors): `op` (a registry handle bound to the
    attributes) gets the tensors and shape=tuple(shape)."""
    _op_name = None

    def _setup(self, name, **attrs):
        Primitive.__init__(self, name)
        self._one = _handles[self._op_name].bind(**attrs)
        for k, v in attrs.items():
            self.add_prim_attr(k, v)

    def __call__(self, shape, *tensors):
        name = type(self).__name__
        for i, t in enumerate(tensors):
            if not isinstance(t, _mycel.Tensor):
                raise not_tensor_error(name, self._inputs[i], t)
        return self._one(*tensors, shape=_shape_tuple(name, shape))

    @property
    def _mycel_graph_function(self):
        # One function per arity: graph mode takes no keywords after *args, and `shape` is the
        # op's first attribute, so it follows the tensors positionally.
        one = self._one

        def call0(shape):
            return one(shape)

        def call1(shape, a):
            return one(a, shape)

        def call4(shape, a, b, c, d):
            return one(a, b, c, d, shape)
        return {0: call0, 1: call1, 4: call4}[len(self._inputs)]


class StandardLaplace(_ShapeFirst):
    """Laplace(0, 1) samples: StandardLaplace(seed=0, seed2=0)(shape), float32."""
    _op_name, _inputs = "standard_laplace", ()

    def __init__(self, seed=0, seed2=0):
        self._setup("StandardLaplace", seed=seed, seed2=seed2)


class RandomGamma(_ShapeFirst):
    """Gamma(alpha, 1) samples: RandomGamma(seed=0, seed2=0)(shape, alpha), of shape
    shape + alpha.shape and alpha's dtype."""
    _op_name, _inputs = "random_gamma", ("alpha",)

    def __init__(self, seed=0, seed2=0):
        self._setup("RandomGamma", seed=seed, seed2=seed2)


class RandomPoisson(_ShapeFirst):
    """Poisson(rate) samples: RandomPoisson(seed=0, seed2=0, dtype=int64)(shape, rate), of shape
    shape + rate.shape."""
    _op_name, _inputs = "random_poisson", ("rate",)

    def __init__(self, seed=0, seed2=0, dtype=mstype.int64):
        self._setup("RandomPoisson", seed=seed, seed2=seed2, dtype=dtype)


class ParameterizedTruncatedNormal(_ShapeFirst):
    """N(mean, stdevs^2) restricted to [min, max]: ParameterizedTruncatedNormal(seed=0,
    seed2=0)(shape, mean, stdevs, min, max); each parameter holds one value or one per row of
    shape[0]; mean's dtype."""
    _op_name, _inputs = "parameterized_truncated_normal", ("mean", "stdevs", "min", "max")

    def __init__(self, seed=0, seed2=0):
        self._setup("ParameterizedTruncatedNormal", seed=seed, seed2=seed2)


class NonDeterministicInts(_ShapeFirst):
    """Integers over dtype's whole range from the operating system's entropy (no seed):
    NonDeterministicInts(dtype=int64)(shape)."""
    _op_name, _inputs = "non_deterministic_ints", ()

    def __init__(self, dtype=mstype.int64):
        self._setup("NonDeterministicInts", dtype=dtype)


class _CandidateSampler(Primitive):
    """Shared by the two samplers: (sampled_candidates, true_expected_count,
    sampled_expected_count) for true_classes (batch, num_true)."""
    _distribution = None

    def __init__(self, num_true, num_sampled, unique, range_max, seed=0,
                 remove_accidental_hits=False):
        name = type(self).__name__
        Primitive.__init__(self, name)
        attrs = dict(num_true=_check_int(name, "num_true", num_true, 1),
                     num_sampled=_check_int(name, "num_sampled", num_sampled, 1),
                     unique=_check_bool(name, "unique", unique),
                     range_max=_check_int(name, "range_max", range_max, 1),
                     seed=_check_int(name, "seed", seed, 0),
                     remove_accidental_hits=_check_bool(name, "remove_accidental_hits",
                                                        remove_accidental_hits))
        if unique and num_sampled > range_max:
            raise ValueError(f"{name}: with unique=True num_sampled ({num_sampled}) must be <= "
                             f"range_max ({range_max})")
        for k, v in attrs.items():
            self.add_prim_attr(k, v)
        self._one = _handles["candidate_sampler"].bind(distribution=self._distribution, **attrs)

    def __call__(self, true_classes):
        if not isinstance(true_classes, _mycel.Tensor):
            raise not_tensor_error(type(self).__name__, "true_classes", true_classes)
        return self._one(true_classes)

    @property
    def _mycel_graph_function(self):
        one = self._one

        def candidate_sampler(true_classes):
            return one(true_classes)
        return candidate_sampler


class UniformCandidateSampler(_CandidateSampler):
    """num_sampled classes drawn uniformly from [0, range_max) (distinct when unique; with
    remove_accidental_hits, none of the true classes)."""
    _distribution = "uniform"


class LogUniformCandidateSampler(_CandidateSampler):
    """num_sampled classes drawn from [0, range_max) with P(k) = log((k + 2) / (k + 1)) /
    log(range_max + 1) (Zipfian: small classes are frequent)."""
    _distribution = "log_uniform"

    def __init__(self, num_true=1, num_sampled=5, unique=True, range_max=5, seed=0):
        super().__init__(num_true, num_sampled, unique, range_max, seed)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=0,
                              remove_accidental_hits=False):
    """Functional UniformCandidateSampler."""
    return UniformCandidateSampler(num_true, num_sampled, unique, range_max, seed,
                                   remove_accidental_hits)(true_classes)


def log_uniform_candidate_sampler(true_classes, num_true=1, num_sampled=5, unique=True,
                                  range_max=5, seed=0):
    """Functional LogUniformCandidateSampler."""
    return LogUniformCandidateSampler(num_true, num_sampled, unique, range_max, seed)(true_classes)


__all__ = ["StandardLaplace", "RandomGamma", "RandomPoisson", "ParameterizedTruncatedNormal",
           "NonDeterministicInts", "UniformCandidateSampler", "LogUniformCandidateSampler"]
