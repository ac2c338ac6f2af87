"""Gradient rows for the nn family: matmul, dense, conv2d, pooling, normalization, softmax."""
import numpy as np

from . import GradCase

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
    GradCase("log_softmax", [(3, 5)]),
    GradCase("log_softmax", [(2, 3, 4)], attrs=dict(axis=-2), id="axis_m2"),
    GradCase("log_softmax", [()], id="0d"),
]
