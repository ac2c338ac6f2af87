"""Samplers: which rows of a source an epoch reads, and in which order (MindSpore's API).

Random samplers draw from the pipeline seed (`mycel.set_seed`), the sampler's position in the
tree and the epoch number, so each epoch has a new order and every run with the same seed repeats.
"""
import numbers

import numpy as np

from mycel import _mycel

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "DistributedSampler",
           "SubsetRandomSampler", "SubsetSampler", "WeightedRandomSampler"]


def _check_count(name, arg, value, allow_none=True):
    if value is None and allow_none:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name}: {arg} must be a non-negative int, got {value!r}")


def _indices(name, indices):
    arr = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got dtype {arr.dtype}")
    return [int(i) for i in arr.reshape(-1)]


class Sampler:
    """Base of the built-in samplers."""

    _kind = "sequential"

    def __init__(self, num_samples=None):
        _check_count(type(self).__name__, "num_samples", num_samples)
        self.num_samples = num_samples

    def get_num_samples(self):
        """num_samples as given (None: all rows)."""
        return self.num_samples

    def add_child(self, sampler):
        raise NotImplementedError(f"{type(self).__name__}.add_child: chained samplers are not supported")

    def _spec(self):
        s = _mycel.data.engine.SamplerSpec()
        s.kind = self._kind
        s.num_samples = -1 if self.num_samples is None else int(self.num_samples)
        return s

    def _size(self, n):
        """Rows per epoch for a source of n rows."""
        return _mycel.data.engine.sampler_size(self._spec(), n)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


class SequentialSampler(Sampler):
    """Rows start_index, start_index+1, ... in order."""

    def __init__(self, start_index=None, num_samples=None):
        super().__init__(num_samples)
        _check_count("SequentialSampler", "start_index", start_index)
        self.start_index = start_index or 0

    def _spec(self):
        s = super()._spec()
        s.start_index = int(self.start_index)
        return s


class RandomSampler(Sampler):
    """A random permutation per epoch (or draws with replacement)."""

    _kind = "random"

    def __init__(self, replacement=False, num_samples=None):
        super().__init__(num_samples)
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement must be a bool, got {replacement!r}")
        self.replacement = replacement

    def _spec(self):
        s = super()._spec()
        s.replacement = self.replacement
        return s


class DistributedSampler(Sampler):
    """Shard shard_id of num_shards: every shard sees the same (optionally shuffled) order and
    takes positions shard_id, shard_id + num_shards, ...; shards are padded by wrapping around to
    ceil(n / num_shards) rows each, so a few rows appear in two shards when n % num_shards != 0."""

    _kind = "distributed"

    def __init__(self, num_shards, shard_id, shuffle=True, num_samples=None, offset=-1):
        super().__init__(num_samples)
        if not isinstance(num_shards, numbers.Integral) or num_shards < 1:
            raise ValueError(f"DistributedSampler: num_shards must be an int >= 1, got {num_shards!r}")
        if not isinstance(shard_id, numbers.Integral) or not 0 <= shard_id < num_shards:
            raise ValueError(f"DistributedSampler: shard_id must be in [0, {num_shards}), got {shard_id!r}")
        if not isinstance(shuffle, bool):
            raise TypeError(f"DistributedSampler: shuffle must be a bool, got {shuffle!r}")
        if offset != -1:
            raise NotImplementedError("DistributedSampler: offset is not supported")
        self.num_shards, self.shard_id, self.shuffle = int(num_shards), int(shard_id), shuffle

    def _spec(self):
        s = super()._spec()
        s.num_shards, s.shard_id, s.shuffle = self.num_shards, self.shard_id, self.shuffle
        return s


class SubsetSampler(Sampler):
    """The given indices, in the given order."""

    _kind = "subset"

    def __init__(self, indices, num_samples=None):
        super().__init__(num_samples)
        self.indices = _indices(type(self).__name__, indices)

    def _spec(self):
        s = super()._spec()
        s.indices = self.indices
        return s


class SubsetRandomSampler(SubsetSampler):
    """The given indices in a new random order each epoch."""

    _kind = "subset_random"


class WeightedRandomSampler(Sampler):
    """Row i drawn with probability weights[i] / sum(weights)."""

    _kind = "weighted"

    def __init__(self, weights, num_samples=None, replacement=True):
        super().__init__(num_samples)
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.size == 0:
            raise ValueError("WeightedRandomSampler: weights must not be empty")
        if (w < 0).any() or not np.isfinite(w).all():
            raise ValueError("WeightedRandomSampler: weights must be finite and >= 0")
        if not isinstance(replacement, bool):
            raise TypeError(f"WeightedRandomSampler: replacement must be a bool, got {replacement!r}")
        self.weights, self.replacement = [float(x) for x in w], replacement

    def _spec(self):
        s = super()._spec()
        s.weights, s.replacement = self.weights, self.replacement
        return s
