"""nn backward ops: wrong shapes, dtypes and attributes raise errors naming the op and argument;
the gradient policy of each backward op is declared."""
import numpy as np
import pytest

import mycel
from mycel import _mycel, ops


def t(*shape, dtype=np.float32):
    return mycel.Tensor(np.ones(shape, dtype=dtype))


def test_conv_backprop_input_dout_shape():
    with pytest.raises(ValueError, match=r"\[conv2d_backprop_input\] input 'dout' shape \(2, 4, 5, 5\) must be "
                                         r"the conv2d output shape \(2, 4, 4, 4\)"):
        ops.conv2d_backprop_input(t(2, 4, 5, 5), t(4, 3, 3, 3), input_size=(2, 3, 6, 6))


def test_conv_backprop_input_size_attr():
    with pytest.raises(ValueError, match=r"\[conv2d_backprop_input\] attribute 'input_size' must have 4 values"):
        ops.conv2d_backprop_input(t(2, 4, 4, 4), t(4, 3, 3, 3), input_size=(3, 6, 6))


def test_conv_backprop_input_batch_follows_dout():
    dx = ops.conv2d_backprop_input(t(5, 4, 4, 4), t(4, 3, 3, 3), input_size=(-1, 3, 6, 6))
    assert dx.shape == (5, 3, 6, 6)


def test_conv_backprop_negative_sizes():
    with pytest.raises(ValueError, match=r"\[conv2d_backprop_filter\] attribute 'filter_size' must not be negative"):
        ops.conv2d_backprop_filter(t(1, 4, 4, 4), t(1, 3, 6, 6), filter_size=(4, 3, -3, 3))
    with pytest.raises(ValueError, match=r"\[conv2d_backprop_input\] attribute 'input_size' must not be negative"):
        ops.conv2d_backprop_input(t(1, 4, 4, 4), t(4, 3, 3, 3), input_size=(1, 3, -6, 6))


def test_conv_backprop_filter_channels():
    with pytest.raises(ValueError, match=r"\[conv2d_backprop_filter\].*groups"):
        ops.conv2d_backprop_filter(t(1, 4, 4, 4), t(1, 3, 6, 6), filter_size=(4, 3, 3, 3), groups=2)


def test_conv_backprop_filter_dtype():
    with pytest.raises(TypeError, match=r"\[conv2d_backprop_filter\]"):
        ops.conv2d_backprop_filter(t(1, 4, 4, 4), t(1, 3, 6, 6, dtype=np.float64), filter_size=(4, 3, 3, 3))


def test_pool_grad_dout_shape():
    with pytest.raises(ValueError, match=r"\[max_pool2d_grad\] input 'dout' shape \(1, 2, 3, 3\) must be the "
                                         r"pooled shape \(1, 2, 2, 2\)"):
        ops.max_pool2d_grad(t(1, 2, 4, 4), t(1, 2, 3, 3), kernel_size=2, strides=2)
    with pytest.raises(ValueError, match=r"\[avg_pool2d_grad\] input 'dout'"):
        ops.avg_pool2d_grad(t(1, 2, 4, 4), t(1, 3, 2, 2), kernel_size=2, strides=2)


def test_batch_norm_grad_shapes():
    x, c = t(4, 3, 2), t(3)
    with pytest.raises(ValueError, match=r"\[batch_norm_grad\] input 'dout' shape \(4, 3\) must equal input 'x'"):
        ops.batch_norm_grad(t(4, 3), x, c, c, c, c, c)
    with pytest.raises(ValueError, match=r"\[batch_norm_grad\] input 'saved_invstd' must have shape \(3,\)"):
        ops.batch_norm_grad(x, x, c, c, t(2), c, c)


def test_layer_norm_grad_shapes():
    x, s = t(2, 5), t(2, 1)
    with pytest.raises(ValueError, match=r"\[layer_norm_grad\] input 'gamma' must have shape \(5,\)"):
        ops.layer_norm_grad(x, x, t(4), s, s, s, s)
    with pytest.raises(ValueError, match=r"\[layer_norm_grad\] input 'rstd' must have shape \(2, 1\)"):
        ops.layer_norm_grad(x, x, t(5), s, t(2), s, s)


@pytest.mark.parametrize("name,policy", [
    ("conv2d_backprop_input", "bprop"), ("conv2d_backprop_filter", "bprop"), ("avg_pool2d_grad", "bprop"),
    ("max_pool2d_grad", "unsupported"), ("batch_norm_grad", "unsupported"), ("layer_norm_grad", "unsupported")])
def test_backward_op_policies(name, policy):
    assert _mycel.op_handles[name].grad == policy


def test_no_todo_left_in_nn_families():
    nn_ops = ["matmul", "dense", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm",
              "layer_norm", "softmax", "log_softmax", "softmax_cross_entropy_with_logits",
              "sparse_softmax_cross_entropy_with_logits", "nll_loss", "binary_cross_entropy",
              "binary_cross_entropy_with_logits", "mse_loss"]
    assert [n for n in nn_ops if _mycel.op_handles[n].grad == "todo"] == []


def test_unsupported_backward_op_refuses_differentiation():
    x, d = mycel.Tensor(np.ones((1, 1, 4, 4))), mycel.Tensor(np.ones((1, 1, 2, 2)))
    with pytest.raises(NotImplementedError, match=r"\[max_pool2d_grad\].*'unsupported'"):
        _mycel.ad.vjp("max_pool2d_grad", [x, d], x, kernel_size=2, strides=2)
