"""nn.SyncBatchNorm: batch normalization whose batch statistics span the batches of every rank
in a group, as if one BatchNorm saw their concatenation. Single process (or a group of one):
BatchNorm itself.

The per-channel sum and element count are AllReduced, then the sum of squared deviations from
that mean (two passes: the one-pass E[x^2] - E[x]^2 cancels badly for large means). The result
is built of ops, so the gradient flows back through the AllReduces (whose bprop sums every
rank's cotangent): d(sum of all ranks' losses)/dx, the gradient of the concatenated batch."""
import itertools

from mycel import ops
from mycel.common import dtype as mstype
from mycel.communication.management import MPI_WORLD_COMM_GROUP, _comm, create_group
from mycel.nn.layer.normalization import _BatchNorm
from mycel.common.validator import check_rank

# Groups made for process_groups, by their rank list: layers with the same list share one.
_GROUPS = {}


def _sync_group(who, process_groups):
    """The group this rank's statistics are reduced over, or None when there is nothing to sync
    with (no communicator, one rank, process_groups=0, or this rank alone in its list)."""
    if process_groups == 0 or not _comm.initialized() or _comm.world_size() == 1:
        return None
    rank, size = _comm.world_rank(), _comm.world_size()
    if process_groups is None:
        return MPI_WORLD_COMM_GROUP
    seen = set()
    for rid in itertools.chain(*process_groups):
        if isinstance(rid, bool) or not isinstance(rid, int) or not 0 <= rid < size:
            raise ValueError(f"{who}: every rank id in 'process_groups' must be an int in [0, {size}), "
                             f"got {rid!r} in {process_groups}")
        if rid in seen:
            raise ValueError(f"{who}: rank id {rid} appears twice in 'process_groups' {process_groups}")
        seen.add(rid)
    for ranks in process_groups:
        if rank in ranks and len(ranks) > 1:
            key = tuple(ranks)
            if key not in _GROUPS:
                _GROUPS[key] = "sync_batch_norm_" + "_".join(map(str, key))
                create_group(_GROUPS[key], list(key))
            return _GROUPS[key]
    return None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization with batch statistics over every rank of `process_groups` (a list of
    rank lists, one group each; None: all ranks; 0: none). The moving statistics follow the
    group's statistics (the unbiased variance of the concatenated batch), so they stay equal on
    every rank of a group. Input (N, C) or (N, C, ...) (MindSpore takes 2-d and 4-d)."""

    _ranks = (2, 3, 4, 5)

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, process_groups=None, dtype=mstype.float32):
        super().__init__(num_features, eps, momentum, affine, gamma_init, beta_init, moving_mean_init,
                         moving_var_init, use_batch_statistics, dtype=dtype)
        who = type(self).__name__
        if process_groups not in (None, 0):
            if not isinstance(process_groups, list) or not all(isinstance(g, list) for g in process_groups):
                raise TypeError(f"{who}: argument 'process_groups' must be a list of rank-id lists, "
                                f"got {process_groups!r}")
        self.process_groups = process_groups
        self.group = _sync_group(who, process_groups)
        self._allreduce = None if self.group is None else ops.AllReduce(op="sum", group=self.group)

    def construct(self, x):
        check_rank(self.cls_name, "x", x.ndim, self._ranks)
        batch_stats = self.training if self.use_batch_statistics is None else self.use_batch_statistics
        if self._allreduce is None or not batch_stats:
            y, _, _ = ops.batch_norm(x, self.gamma, self.beta, self.moving_mean, self.moving_variance,
                                     is_training=batch_stats, epsilon=self.eps, momentum=1.0 - self.momentum)
            return y
        return self._synced(x)

    def _synced(self, x):
        """Normalizes x with the group's batch statistics and updates the moving ones."""
        c = self.num_features
        axes = (0,) + tuple(range(2, x.ndim))
        stat_shape = (1, c) + (1,) * (x.ndim - 2)
        local = ops.fill(x.dtype, (1,), x.size // c)
        totals = self._allreduce(ops.concat((ops.reshape(ops.sum(x, axes), (c,)), local), 0))
        count = totals[c:]
        mean = totals[:c] / count
        centered = x - ops.reshape(mean, stat_shape)
        var = self._allreduce(ops.reshape(ops.sum(centered * centered, axes), (c,))) / count
        invstd = ops.rsqrt(var + self.eps)
        y = centered * ops.reshape(invstd * self.gamma, stat_shape) + ops.reshape(self.beta, stat_shape)
        m = self.momentum
        unbiased = ops.stop_gradient(var * count / (count - 1.0))
        ops.assign(self.moving_mean, m * self.moving_mean + (1.0 - m) * ops.stop_gradient(mean))
        ops.assign(self.moving_variance, m * self.moving_variance + (1.0 - m) * unbiased)
        return y


__all__ = ["SyncBatchNorm"]
