"""GroupNorm and InstanceNorm1d/2d/3d (MindSpore's): mean and variance over each group of channels
(GroupNorm) or each channel (InstanceNorm) of one sample, then a per-channel affine. Composites
of registry ops (mean, var, sqrt), so both modes and gradients come from the ops."""
from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param


def _group_normalize(x, groups, eps):
    n, c = x.shape[0], x.shape[1]
    g = ops.reshape(x, (n, groups, -1))
    mean = ops.mean(g, (2,), True)
    var = ops.var(g, (2,), True)  # population variance, as MindSpore's
    return ops.reshape((g - mean) / ops.sqrt(var + eps), x.shape)


class GroupNorm(Cell):
    """num_groups groups of num_channels / num_groups channels; input (N, C, ...)."""

    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True, gamma_init="ones", beta_init="zeros",
                 dtype=mstype.float32):
        super().__init__()
        who = "GroupNorm"
        self.num_groups = check_int(num_groups, who, "num_groups")
        self.num_channels = check_int(num_channels, who, "num_channels")
        if num_channels % num_groups:
            raise ValueError(f"{who}: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.eps, self.affine = float(eps), bool(affine)
        self.gamma = make_param(gamma_init, (num_channels,), dtype, "gamma", requires_grad=self.affine)
        self.beta = make_param(beta_init, (num_channels,), dtype, "beta", requires_grad=self.affine)

    def construct(self, x):
        check_rank("GroupNorm", "x", x.ndim, (2, 3, 4, 5))
        if x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: x has {x.shape[1]} channels (dim 1), the layer {self.num_channels}")
        y = _group_normalize(x, self.num_groups, self.eps)
        shape = (1, self.num_channels) + (1,) * (x.ndim - 2)
        return y * ops.reshape(self.gamma, shape) + ops.reshape(self.beta, shape)

    def extend_repr(self):
        return f"num_groups={self.num_groups}, num_channels={self.num_channels}"


class _InstanceNorm(Cell):
    """Each channel of each sample normalized over its spatial dims, then gamma/beta per channel
    (affine). Running statistics are not tracked (MindSpore's training behaviour)."""
    _rank = 4

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, gamma_init="ones", beta_init="zeros",
                 dtype=mstype.float32):
        super().__init__()
        self._who = type(self).__name__
        self.num_features = check_int(num_features, self._who, "num_features")
        self.eps, self.momentum, self.affine = float(eps), float(momentum), bool(affine)
        self.gamma = make_param(gamma_init, (num_features,), dtype, "gamma", requires_grad=self.affine)
        self.beta = make_param(beta_init, (num_features,), dtype, "beta", requires_grad=self.affine)

    def construct(self, x):
        check_rank(self._who, "x", x.ndim, (self._rank,))
        if x.shape[1] != self.num_features:
            raise ValueError(f"{self._who}: x has {x.shape[1]} channels (dim 1), the layer {self.num_features}")
        y = _group_normalize(x, self.num_features, self.eps)
        shape = (1, self.num_features) + (1,) * (self._rank - 2)
        return y * ops.reshape(self.gamma, shape) + ops.reshape(self.beta, shape)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) inputs over L."""
    _rank = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) inputs over (H, W)."""
    _rank = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) inputs over (D, H, W)."""
    _rank = 5


__all__ = ["GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
