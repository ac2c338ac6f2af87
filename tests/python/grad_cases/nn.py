"""Gradient rows for the nn family: matmul, dense, conv2d, pooling, normalization, softmax."""
import numpy as np

from . import GradCase


def _bn(x_shape):
    def gen(rng):
        c = x_shape[1]
        return [rng.standard_normal(x_shape), rng.standard_normal(c), rng.standard_normal(c),
                rng.standard_normal(c), rng.uniform(0.5, 2.0, size=c)]
    return gen


def _ln(x_shape, begin_params_axis):
    def gen(rng):
        p = x_shape[begin_params_axis % len(x_shape):]
        return [rng.standard_normal(x_shape), rng.standard_normal(p), rng.standard_normal(p)]
    return gen


CASES = [
    # matmul: plain, transposes, batch broadcasting, 1-d operands
    GradCase("matmul", [(3, 4), (4, 5)]),
    GradCase("matmul", [(4, 3), (4, 5)], attrs=dict(transpose_a=True), id="ta"),
    GradCase("matmul", [(3, 4), (5, 4)], attrs=dict(transpose_b=True), id="tb"),
    GradCase("matmul", [(4, 3), (2, 5, 4)], attrs=dict(transpose_a=True, transpose_b=True), id="ta_tb_batch"),
    GradCase("matmul", [(2, 1, 3, 4), (5, 4, 2)], id="batch_bcast"),
    GradCase("matmul", [(2, 3, 4), (1, 4, 2)], attrs=dict(transpose_b=False), id="batch_one"),
    GradCase("matmul", [(4,), (4,)], id="1d_1d"),
    GradCase("matmul", [(4,), (2, 4, 3)], attrs=dict(transpose_a=True), id="1d_x"),
    GradCase("matmul", [(2, 3, 4), (4,)], id="1d_y"),
    GradCase("matmul", [(3, 4), (2, 5, 4)], attrs=dict(transpose_b=True), id="tb_batch"),
    # dense
    GradCase("dense", [(3, 4), (5, 4), (5,)]),
    GradCase("dense", [(2, 3, 4), (5, 4), None], id="3d_no_bias"),
    GradCase("dense", [(4,), (3, 4), (3,)], id="1d"),
    # softmax / log_softmax
    GradCase("softmax", [(3, 5)]),
    GradCase("softmax", [(2, 3, 4)], attrs=dict(axis=1), id="axis1"),
    GradCase("softmax", [(2, 3, 4)], attrs=dict(axis=0), id="axis0"),
    GradCase("softmax", [()], id="0d"),
    # softmax_grad's own bprop (softmax's second derivative), both inputs
    GradCase("softmax_grad", [(3, 5), (3, 5)]),
    GradCase("softmax_grad", [(2, 9, 4), (2, 9, 4)], attrs=dict(axis=1), id="axis1"),
    GradCase("softmax_grad", [(2, 3, 11), (2, 3, 11)], id="row11"),
    GradCase("log_softmax", [(3, 5)]),
    GradCase("log_softmax", [(2, 3, 4)], attrs=dict(axis=-2), id="axis_m2"),
    GradCase("log_softmax", [()], id="0d"),
    # conv2d and its backward ops (whose rules give second derivatives)
    GradCase("conv2d", [(2, 3, 6, 5), (4, 3, 3, 3), (4,)]),
    GradCase("conv2d", [(1, 2, 7, 7), (3, 2, 3, 2), None], attrs=dict(stride=2, pad_mode="same"), id="same_stride2"),
    GradCase("conv2d", [(2, 2, 7, 6), (3, 2, 3, 3), None], attrs=dict(pad_mode="pad", pad=(1, 2, 0, 1), stride=(2, 1)),
             id="pad4"),
    GradCase("conv2d", [(1, 2, 8, 7), (2, 2, 3, 3), None], attrs=dict(dilation=2, pad_mode="pad", pad=1), id="dilation"),
    GradCase("conv2d", [(2, 4, 5, 5), (6, 2, 3, 3), (6,)], attrs=dict(groups=2, pad_mode="same"), id="groups"),
    GradCase("conv2d", [(1, 3, 5, 5), (3, 1, 3, 3), None], attrs=dict(groups=3), id="depthwise"),
    GradCase("conv2d_backprop_input", [(2, 4, 4, 3), (4, 3, 3, 3)], attrs=dict(input_size=(2, 3, 6, 5))),
    GradCase("conv2d_backprop_input", [(1, 4, 3, 3), (4, 1, 3, 3)],
             attrs=dict(input_size=(1, 2, 6, 5), stride=2, pad_mode="same", groups=2), id="same_groups"),
    GradCase("conv2d_backprop_filter", [(2, 4, 4, 3), (2, 3, 6, 5)], attrs=dict(filter_size=(4, 3, 3, 3))),
    GradCase("conv2d_backprop_filter", [(1, 3, 4, 3), (1, 2, 7, 7)],
             attrs=dict(filter_size=(3, 2, 3, 3), stride=2, pad_mode="pad", pad=1, dilation=(1, 2)), id="dilated"),
    # pooling (max: distinct values so no window has a tie)
    GradCase("max_pool2d", lambda rng: [rng.permutation(2 * 3 * 6 * 7).reshape(2, 3, 6, 7) * 0.1],
             attrs=dict(kernel_size=2, strides=2)),
    GradCase("max_pool2d", lambda rng: [rng.permutation(2 * 7 * 7).reshape(1, 2, 7, 7) * 0.1],
             attrs=dict(kernel_size=3, strides=2, pad_mode="same"), id="same_overlap"),
    GradCase("max_pool2d", lambda rng: [rng.permutation(2 * 7 * 6).reshape(2, 7, 6) * 0.1],
             attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1), id="chw_pad"),
    GradCase("avg_pool2d", [(2, 3, 6, 7)], attrs=dict(kernel_size=2, strides=2)),
    GradCase("avg_pool2d", [(1, 2, 7, 7)], attrs=dict(kernel_size=3, strides=2, pad_mode="same"), id="same"),
    GradCase("avg_pool2d", [(1, 2, 7, 6)],
             attrs=dict(kernel_size=3, strides=2, pad_mode="pad", pad=1, count_include_pad=True), id="pad_include"),
    GradCase("avg_pool2d", [(2, 9, 8)], attrs=dict(kernel_size=(3, 4), strides=(2, 3), pad_mode="pad", pad=(1, 0, 2, 1)),
             id="chw_pad4"),
    GradCase("avg_pool2d_grad", [(1, 2, 7, 7), (1, 2, 4, 4)], attrs=dict(kernel_size=3, strides=2, pad_mode="same"),
             wrt=[1]),
    GradCase("adaptive_avg_pool2d", [(2, 3, 7, 9)], attrs=dict(output_size=(3, 4))),
    GradCase("adaptive_avg_pool2d", [(3, 5, 5)], attrs=dict(output_size=2), id="chw"),
    GradCase("adaptive_avg_pool2d", [(1, 2, 4, 4)], attrs=dict(output_size=(6, 1)), id="upsample"),
    # batch_norm: x, scale, bias (running statistics are state, never differentiated)
    GradCase("batch_norm", _bn((4, 3, 2, 3)), attrs=dict(is_training=True), wrt=[0, 1, 2], id="training"),
    GradCase("batch_norm", _bn((5, 2)), attrs=dict(is_training=True, epsilon=1e-3), wrt=[0, 1, 2],
             id="training_2d"),
    GradCase("batch_norm", _bn((2, 3, 4)), wrt=[0, 1, 2], id="inference"),
    # layer_norm: gamma spanning the normalized dims, fewer of them, or more
    GradCase("layer_norm", _ln((3, 6), -1)),
    GradCase("layer_norm", _ln((2, 3, 4), 1), attrs=dict(begin_norm_axis=1, begin_params_axis=1), id="axis1"),
    GradCase("layer_norm", _ln((2, 3, 4), -1), attrs=dict(begin_norm_axis=1, begin_params_axis=-1),
             id="params_last"),
    GradCase("layer_norm", _ln((2, 3, 4), 0), attrs=dict(begin_norm_axis=-1, begin_params_axis=0),
             id="params_first"),
]
