"""Table rows for the random ops. Their values are random, so test_op_table skips them
(**R); test_random.py runs each row for shape/dtype and tests the statistics.
A row's ref returns an array of the expected shape and dtype (values irrelevant); for ops with a
`dtype` attribute the row's dtypes are values of that attribute, otherwise of the input."""
import numpy as np

from op_cases import OpCase

FLOAT = ("float16", "float32", "float64")
INT = ("int8", "uint8", "int16", "int32", "int64")
ALL = ("bool",) + INT + FLOAT
R = dict(nondeterministic=True)


def _like_shape(shape=None, size=None, **attrs):
    return np.empty(shape if shape is not None else size, dtype=attrs.get("dtype", "float32"))


def _like_input(x, **attrs):
    return np.empty_like(x)


def _dropout(x, **attrs):
    return np.empty_like(x), np.empty_like(x)


def _randint(**attrs):
    return np.empty(attrs["shape"], dtype=attrs.get("dtype", "int64"))


CASES = [
    OpCase("uniform", _like_shape, [], attrs={"shape": (3, 4)}, dtypes=FLOAT, **R),
    OpCase("uniform", _like_shape, [], attrs={"shape": (0, 4)}, id="empty", **R),
    OpCase("uniform", _like_shape, [], attrs={"shape": ()}, id="0d", **R),
    OpCase("uniform", _like_shape, [], attrs={"shape": (300, 301), "minval": -2.0, "maxval": 5.0},
           id="large", **R),
    OpCase("normal", _like_shape, [], attrs={"shape": (3, 4)}, dtypes=FLOAT, **R),
    OpCase("normal", _like_shape, [], attrs={"shape": (0,)}, id="empty", **R),
    OpCase("normal", _like_shape, [], attrs={"shape": (301, 300), "mean": 3.0, "stddev": 0.5},
           id="large", **R),
    OpCase("randint", _randint, [], attrs={"low": 0, "high": 7, "shape": (3, 4)}, dtypes=INT, **R),
    OpCase("randint", _randint, [], attrs={"low": -3, "high": 7, "shape": (5,)}, id="signed",
           dtypes=("int8", "int64"), **R),
    OpCase("randint", _randint, [], attrs={"low": 0, "high": 2**40, "shape": (50000,)},
           dtypes=("int64",), id="large", **R),
    OpCase("bernoulli", _like_input, [(3, 4)], attrs={"p": 0.3}, dtypes=ALL, **R),
    OpCase("bernoulli", _like_input, [()], id="0d", **R),
    OpCase("bernoulli", _like_input, [(200, 200)], id="large", **R),
    OpCase("dropout", _dropout, [(3, 4)], attrs={"keep_prob": 0.8}, dtypes=FLOAT, **R),
    OpCase("dropout", _dropout, [(0, 4)], id="empty", **R),
    OpCase("dropout", _dropout, [(200, 200)], id="large", **R),
]


# The sampled distributions (ops/random_dist.cc); their statistics: test_random_dist.py.
def _sampled(extra_of, dtype_of):
    def ref(*arrays, shape=(), **attrs):
        return np.empty(tuple(shape) + extra_of(*arrays, **attrs), dtype=dtype_of(*arrays, **attrs))
    return ref


def _rows_out(x, num_sample=None, num_samples=None, **attrs):
    return x.shape[:-1] + (num_sample if num_sample is not None else num_samples,)


CASES += [
    OpCase("standard_laplace", _like_shape, [], attrs={"shape": (3, 4)}, dtypes=FLOAT, **R),
    OpCase("standard_laplace", _like_shape, [], attrs={"shape": (0, 2)}, id="empty", **R),
    OpCase("random_gamma", _sampled(lambda a, **k: a.shape, lambda a, **k: a.dtype), [(2,)],
           attrs={"shape": (3,)}, domain="positive", dtypes=FLOAT, **R),
    OpCase("random_poisson", _sampled(lambda r, **k: r.shape, lambda r, **k: np.float32), [(2, 2)],
           attrs={"shape": (4,)}, domain="positive", dtypes=FLOAT, **R),
    OpCase("random_categorical", _sampled(lambda x, **k: _rows_out(x, **k), lambda x, **k: np.int64), [(3, 5)],
           attrs={"num_sample": 4}, dtypes=FLOAT, **R),
    OpCase("multinomial", _sampled(lambda x, **k: _rows_out(x, **k), lambda x, **k: np.int32), [(3, 5)],
           attrs={"num_samples": 4}, domain="positive", dtypes=FLOAT, **R),
    OpCase("multinomial", _sampled(lambda x, **k: _rows_out(x, **k), lambda x, **k: np.int32), [(6,)],
           attrs={"num_samples": 6, "replacement": False}, domain="positive", id="no_replacement", **R),
    OpCase("multinomial_with_replacement", lambda x, s, o, numsamples, replacement: np.empty(
        x.shape[:-1] + (numsamples,), np.int64),
        lambda rng, dt: [rng.uniform(0.1, 2.0, (3, 5)).astype(dt), np.array([3], np.int64), np.array([5], np.int64)],
        attrs={"numsamples": 4, "replacement": True}, dtypes=FLOAT, **R),
]


# The samplers of ops/random_more.cc; their statistics: compat/test_compat_random_more.py.
def _binomial_inputs(rng, dtype):
    return [rng.integers(0, 30, size=(3, 4)).astype(dtype), rng.uniform(0, 1, size=(3, 4)).astype(dtype)]


CASES += [
    OpCase("truncated_normal", _like_shape, [], attrs={"shape": (3, 4)}, dtypes=FLOAT, **R),
    OpCase("truncated_normal", _like_shape, [], attrs={"shape": (0, 2)}, id="empty", **R),
    OpCase("log_normal", _like_input, [(3, 4)], attrs={"mean": 0.5, "std": 0.3}, dtypes=FLOAT, **R),
    OpCase("exponential", _like_input, [(3, 4)], attrs={"lambd": 2.0}, dtypes=FLOAT, **R),
    OpCase("exponential", _like_input, [(0,)], id="empty", **R),
    OpCase("binomial", lambda n, p, **k: np.empty_like(n), _binomial_inputs, dtypes=FLOAT, **R),
    OpCase("random_beta", _sampled(lambda a, b, **k: a.shape, lambda a, b, **k: a.dtype), [(2,), (2,)],
           attrs={"shape": (3,)}, domain="positive", dtypes=FLOAT, **R),
]


# ParameterizedTruncatedNormal, NonDeterministicInts (no seed: test_random.py skips it; its
# statistics and the samplers': compat/test_compat_random_prims.py) and the candidate samplers.
def _ptn_inputs(rng, dt):
    return [np.array(v, dt) for v in ([0.0, 1.0], [1.0, 2.0], [-1.0, 0.5], [1.0, 4.0])]


def _sampler_ref(t, num_sampled=1, **attrs):
    return (np.empty((num_sampled,), t.dtype), np.empty(t.shape, np.float32),
            np.empty((num_sampled,), np.float32))


CASES += [
    OpCase("parameterized_truncated_normal", lambda *p, shape=(), **k: np.empty(shape, p[0].dtype),
           _ptn_inputs, attrs={"shape": (2, 3)}, dtypes=FLOAT, **R),
    OpCase("non_deterministic_ints", _like_shape, [], attrs={"shape": (3, 4)},
           dtypes=("int32", "int64", "uint32", "uint64"), **R),
    OpCase("candidate_sampler", _sampler_ref, lambda rng, dt: [rng.integers(0, 5, size=(2, 1)).astype(dt)],
           attrs={"num_true": 1, "num_sampled": 3, "unique": True, "range_max": 5},
           dtypes=("int32", "int64"), **R),
    OpCase("candidate_sampler", _sampler_ref, lambda rng, dt: [rng.integers(0, 9, size=(3, 2)).astype(dt)],
           attrs={"num_true": 2, "num_sampled": 4, "unique": False, "range_max": 9,
                  "distribution": "log_uniform"}, dtypes=("int64",), id="log_uniform", **R),
]
