"""BatchNorm1d/2d and LayerNorm."""
from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param


class _BatchNorm(Cell):
    """Normalizes over every dim but the channel dim 1. In training (or with
    use_batch_statistics=True) batch statistics are used and the moving statistics updated in
    place: moving = momentum * moving + (1 - momentum) * batch (MindSpore's convention, so the
    default momentum 0.9 keeps 90% of the old value); otherwise the moving statistics are used."""

    _ranks = (2, 3, 4)

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, data_format="NCHW", dtype=mstype.float32):
        super().__init__()
        who = type(self).__name__
        self.cls_name = who
        self.num_features = check_int(num_features, who, "num_features")
        if not 0 <= momentum <= 1:
            raise ValueError(f"{who}: momentum must be in [0, 1], got {momentum}")
        if eps <= 0:
            raise ValueError(f"{who}: eps must be > 0, got {eps}")
        if use_batch_statistics not in (None, True, False):
            raise ValueError(f"{who}: use_batch_statistics must be None, True or False, got {use_batch_statistics!r}")
        if data_format != "NCHW":
            raise ValueError(f"{who}: only data_format='NCHW' is supported, got {data_format!r}")
        self.eps, self.momentum = float(eps), float(momentum)
        self.use_batch_statistics = use_batch_statistics
        c = (num_features,)
        self.gamma = make_param(gamma_init, c, dtype, "gamma", requires_grad=affine)
        self.beta = make_param(beta_init, c, dtype, "beta", requires_grad=affine)
        self.moving_mean = make_param(moving_mean_init, c, dtype, "mean", requires_grad=False)
        self.moving_variance = make_param(moving_var_init, c, dtype, "variance", requires_grad=False)

    def construct(self, x):
        check_rank(self.cls_name, "x", x.ndim, self._ranks)
        batch_stats = self.training if self.use_batch_statistics is None else self.use_batch_statistics
        y, _, _ = ops.batch_norm(x, self.gamma, self.beta, self.moving_mean, self.moving_variance,
                                 is_training=batch_stats, epsilon=self.eps, momentum=1.0 - self.momentum)
        return y

    def extend_repr(self):
        return f"num_features={self.num_features}, eps={self.eps}, momentum={self.momentum}"


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) input."""

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) input."""

    _ranks = (4,)


class LayerNorm(Cell):
    """Normalizes over the dims from begin_norm_axis; gamma and beta have normalized_shape."""

    def __init__(self, normalized_shape, begin_norm_axis=-1, begin_params_axis=-1, gamma_init="ones",
                 beta_init="zeros", epsilon=1e-7, dtype=mstype.float32):
        super().__init__()
        if isinstance(normalized_shape, int) and not isinstance(normalized_shape, bool):
            normalized_shape = (normalized_shape,)
        if not isinstance(normalized_shape, (tuple, list)) or not normalized_shape:
            raise TypeError(f"LayerNorm: normalized_shape must be a tuple or list of ints, got {normalized_shape!r}")
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.begin_norm_axis, self.begin_params_axis = int(begin_norm_axis), int(begin_params_axis)
        self.epsilon = float(epsilon)
        self.gamma = make_param(gamma_init, self.normalized_shape, dtype, "gamma")
        self.beta = make_param(beta_init, self.normalized_shape, dtype, "beta")

    def construct(self, x):
        # bf16 activations with float32 gamma/beta are fine (amp O2: float32 statistics, bf16
        # output); any other mismatch says which dtype came from the user, which from the layer.
        if x.dtype != self.gamma.dtype and not (x.dtype == mstype.bfloat16 and self.gamma.dtype == mstype.float32):
            raise TypeError(input_dtype_error("LayerNorm", x.dtype, self.gamma.dtype))
        y, _, _ = ops.layer_norm(x, self.gamma, self.beta, begin_norm_axis=self.begin_norm_axis,
                                 begin_params_axis=self.begin_params_axis, epsilon=self.epsilon)
        return y

    def extend_repr(self):
        return f"normalized_shape={self.normalized_shape}, begin_norm_axis={self.begin_norm_axis}, " \
               f"begin_params_axis={self.begin_params_axis}"
