"""nn family: wrong shapes, dtypes and attribute values raise the right error naming the op."""
import numpy as np
import pytest

import mycel
from mycel import ops


def t(*shape, dtype=np.float32):
    return mycel.Tensor(np.ones(shape, dtype=dtype))


def test_matmul_inner_dim_mismatch():
    with pytest.raises(ValueError, match=r"\[matmul\] input 'x' shape \(2, 3\) and 'y' shape \(4, 5\): "
                                         r"x.shape\[-1\] \(3\) must equal y.shape\[-2\] \(4\)"):
        ops.matmul(t(2, 3), t(4, 5))


def test_matmul_transposed_mismatch():
    with pytest.raises(ValueError, match=r"\[matmul\].*transpose_b"):
        ops.matmul(t(2, 3), t(3, 5), transpose_b=True)


def test_matmul_batch_mismatch():
    with pytest.raises(ValueError, match=r"\[matmul\]"):
        ops.matmul(t(2, 3, 4), t(3, 4, 5))


def test_matmul_0d():
    with pytest.raises(ValueError, match=r"\[matmul\] input 'x' must have rank"):
        ops.matmul(t(), t(3))


def test_matmul_dtype():
    with pytest.raises(TypeError, match=r"\[matmul\]"):
        ops.matmul(t(2, 2, dtype=np.bool_), t(2, 2, dtype=np.bool_))


def test_dense_errors():
    with pytest.raises(ValueError, match=r"\[dense\].*x.shape\[-1\] \(3\) must equal w.shape\[1\] \(4\)"):
        ops.dense(t(2, 3), t(5, 4))
    with pytest.raises(ValueError, match=r"\[dense\] input 'b' must have shape \(5,\)"):
        ops.dense(t(2, 4), t(5, 4), t(4))
    with pytest.raises(ValueError, match=r"\[dense\] input 'w' must have rank 2"):
        ops.dense(t(2, 4), t(5, 4, 1))


def test_conv2d_channel_mismatch():
    with pytest.raises(ValueError, match=r"\[conv2d\].*w.shape\[1\] \* groups \(2 \* 1\) must equal .* \(3\)"):
        ops.conv2d(t(1, 3, 5, 5), t(4, 2, 3, 3))


def test_conv2d_group_mismatch():
    with pytest.raises(ValueError, match=r"\[conv2d\].*not divisible by groups \(2\)"):
        ops.conv2d(t(1, 3, 5, 5), t(4, 1, 3, 3), groups=2)
    with pytest.raises(ValueError, match=r"\[conv2d\].*output channels, not divisible by groups \(2\)"):
        ops.conv2d(t(1, 4, 5, 5), t(3, 2, 3, 3), groups=2)
    with pytest.raises(ValueError, match=r"\[conv2d\] attribute 'groups' must be >= 1"):
        ops.conv2d(t(1, 4, 5, 5), t(3, 4, 3, 3), groups=0)


def test_conv2d_kernel_larger_than_input():
    with pytest.raises(ValueError, match=r"\[conv2d\] kernel height 5 .* larger than the padded input height 4"):
        ops.conv2d(t(1, 1, 4, 8), t(1, 1, 5, 3))
    with pytest.raises(ValueError, match=r"\[conv2d\] kernel width 3 \(5 with dilation\)"):
        ops.conv2d(t(1, 1, 8, 4), t(1, 1, 1, 3), dilation=2)
    # Padding makes it fit.
    assert ops.conv2d(t(1, 1, 4, 8), t(1, 1, 5, 3), pad_mode="pad", pad=(1, 0, 0, 0)).shape == (1, 1, 1, 6)


def test_bad_pad_mode():
    with pytest.raises(ValueError, match=r"\[conv2d\] attribute 'pad_mode' must be 'valid', 'same' or 'pad', got 'full'"):
        ops.conv2d(t(1, 1, 4, 4), t(1, 1, 3, 3), pad_mode="full")
    with pytest.raises(ValueError, match=r"\[max_pool2d\] attribute 'pad_mode'"):
        ops.max_pool2d(t(1, 1, 4, 4), kernel_size=2, pad_mode="bogus")
    with pytest.raises(ValueError, match=r"\[avg_pool2d\] attribute 'pad' must be 0 unless pad_mode is 'pad'"):
        ops.avg_pool2d(t(1, 1, 4, 4), kernel_size=2, pad=1)
    # MindSpore spells the modes in upper case too.
    assert ops.max_pool2d(t(1, 1, 4, 4), kernel_size=3, pad_mode="SAME").shape == (1, 1, 4, 4)


def test_attr_value_counts():
    with pytest.raises(ValueError, match=r"\[conv2d\] attribute 'stride' takes 1, 2 or 4 values, got 3"):
        ops.conv2d(t(1, 1, 4, 4), t(1, 1, 3, 3), stride=(1, 1, 1))
    with pytest.raises(ValueError, match=r"\[conv2d\] attribute 'stride' values must be >= 1"):
        ops.conv2d(t(1, 1, 4, 4), t(1, 1, 3, 3), stride=0)
    with pytest.raises(ValueError, match=r"\[conv2d\] attribute 'pad' values must be >= 0"):
        ops.conv2d(t(1, 1, 4, 4), t(1, 1, 3, 3), pad_mode="pad", pad=-1)
    with pytest.raises(ValueError, match=r"\[max_pool2d\] attribute 'kernel_size' values must be >= 1"):
        ops.max_pool2d(t(1, 1, 4, 4), kernel_size=0)
    with pytest.raises(ValueError, match=r"\[adaptive_avg_pool2d\] attribute 'output_size' takes 1 or 2 values"):
        ops.adaptive_avg_pool2d(t(1, 1, 4, 4), output_size=(1, 1, 2, 2))
    with pytest.raises(TypeError, match=r"\[adaptive_avg_pool2d\] missing required attribute 'output_size'"):
        ops.adaptive_avg_pool2d(t(1, 1, 4, 4))


def test_pool_errors():
    with pytest.raises(ValueError, match=r"\[max_pool2d\] kernel height 5 .* larger than the padded input height 4"):
        ops.max_pool2d(t(1, 1, 4, 4), kernel_size=5)
    with pytest.raises(ValueError, match=r"\[avg_pool2d\] padding .* must be at most half the kernel size"):
        ops.avg_pool2d(t(1, 1, 8, 8), kernel_size=2, pad_mode="pad", pad=2)
    with pytest.raises(TypeError, match=r"\[max_pool2d\] input 'x' has unsupported dtype int32"):
        ops.max_pool2d(t(1, 1, 4, 4, dtype=np.int32), kernel_size=2)
    with pytest.raises(ValueError, match=r"\[adaptive_avg_pool2d\] .* non-empty spatial dims"):
        ops.adaptive_avg_pool2d(t(1, 1, 0, 4), output_size=2)


@pytest.mark.parametrize("call", [
    lambda: ops.conv2d(t(1, 5, 5), t(1, 1, 3, 3)),
    lambda: ops.conv2d(t(1, 1, 5, 5), t(1, 3, 3)),
    lambda: ops.max_pool2d(t(5, 5), kernel_size=2),
    lambda: ops.avg_pool2d(t(1, 1, 1, 5, 5), kernel_size=2),
    lambda: ops.adaptive_avg_pool2d(t(5, 5), output_size=2),
    lambda: ops.batch_norm(t(4), t(4), t(4), t(4), t(4)),
    lambda: ops.layer_norm(t(), t(), t()),
], ids=["conv_x", "conv_w", "max_pool", "avg_pool", "adaptive", "batch_norm", "layer_norm"])
def test_wrong_ranks(call):
    with pytest.raises(ValueError, match=r"\[\w+\] input '\w+' must have rank"):
        call()


def test_batch_norm_errors():
    x = t(2, 3, 4)
    with pytest.raises(ValueError, match=r"\[batch_norm\] input 'variance' must have shape \(3,\)"):
        ops.batch_norm(x, t(3), t(3), t(3), t(4))
    with pytest.raises(ValueError, match=r"\[batch_norm\] training needs more than one value per channel"):
        ops.batch_norm(t(1, 3), t(3), t(3), t(3), t(3), is_training=True)
    with pytest.raises(ValueError, match=r"\[batch_norm\] attribute 'momentum' must be in \[0, 1\]"):
        ops.batch_norm(x, t(3), t(3), t(3), t(3), momentum=1.5)
    with pytest.raises(TypeError, match=r"\[batch_norm\] input 'x' has unsupported dtype int32"):
        ops.batch_norm(t(2, 3, dtype=np.int32), t(3), t(3), t(3), t(3))


def test_layer_norm_errors():
    with pytest.raises(ValueError, match=r"\[layer_norm\] input 'gamma' must have shape \(4,\)"):
        ops.layer_norm(t(2, 3, 4), t(3, 4), t(4))
    with pytest.raises(ValueError, match=r"\[layer_norm\] input 'beta' must have shape \(3, 4\)"):
        ops.layer_norm(t(2, 3, 4), t(3, 4), t(4), begin_norm_axis=1, begin_params_axis=1)
    with pytest.raises(ValueError, match=r"\[layer_norm\].*begin_norm_axis"):
        ops.layer_norm(t(2, 3), t(3), t(3), begin_norm_axis=2)
    with pytest.raises(TypeError, match=r"\[layer_norm\] inputs 'x' and 'gamma' must have the same dtype"):
        ops.layer_norm(t(2, 3), t(3, dtype=np.float64), t(3))


def test_softmax_errors():
    with pytest.raises(ValueError, match=r"\[softmax\].*axis"):
        ops.softmax(t(2, 3), axis=2)
    with pytest.raises(ValueError, match=r"\[log_softmax\] attribute 'axis' \(1\) is out of range for a 0-d input"):
        ops.log_softmax(t(), axis=1)
    with pytest.raises(TypeError, match=r"\[softmax\]"):
        ops.softmax(t(2, 3, dtype=np.int32))
