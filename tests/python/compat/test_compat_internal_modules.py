"""MindSpore module paths and small attributes its programs (and its own tests) use:
`mindspore._checkparam` (the argument validator user primitives call), `mindspore.ops.function`
and its topic modules, `mindspore.dtype.bool_`, `Cell.cls_name`, `Optimizer.map_` /
`map_reverse` in a user optimizer, `Primitive.set_device`, and `ops.random_poisson` with the
shape as a Tensor (MindSpore 2.x). References: Python's own semantics, numpy, closed forms."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops
from mycel import _checkparam as validator
from mycel.ops import functional as F
from mycel.ops import operations as P


def test_checkparam_accepts_and_returns_valid_values():
    assert validator.check_value_type("k", 3, [int], "Prim") == 3
    assert validator.check_value_type("mode", "full", [str, type(None)], "Prim") == "full"
    assert validator.check_positive_int(5, "n", "Prim") == 5
    assert validator.check_non_negative_int(0, "n") == 0
    assert validator.check_float_range(0.5, 0.0, 1.0, validator.INC_NEITHER, "beta1", "Adam") == 0.5
    assert validator.check_float_range(1.0, 0.0, 1.0, validator.INC_RIGHT, "beta1", "Adam") == 1.0
    assert validator.check_int_range(3, 0, 3, validator.INC_BOTH, "axis") == 3
    assert validator.check_positive_float(1e-8, "eps", "Adam") == 1e-8
    assert validator.check_bool(True, "flag") is True
    assert validator.check_string("same", ["same", "valid"], "pad_mode", "Conv") == "same"
    assert validator.check_axis_in_range(-1, 4) == 3
    assert validator.check_axis_valid((-1, 0), 3) == (2, 0)
    assert validator.check_positive_int_sequence((1, 2), "ksize") == (1, 2)
    validator.check_tensor_dtype_valid("x", ms.float32, [ms.float32, ms.float16], "Prim")
    assert validator.check_scalar_or_tensor_types_same({"x": ms.float32, "y": ms.float32},
                                                       [ms.float32], "Prim") == ms.float32


@pytest.mark.parametrize("call, error, text", [
    (lambda: validator.check_value_type("k", 3.0, [int], "Prim"), TypeError, "For 'Prim', the 'k'"),
    (lambda: validator.check_value_type("k", True, [int], "Prim"), TypeError, "bool"),
    (lambda: validator.check_positive_int(0, "n", "Prim"), ValueError, "> 0"),
    (lambda: validator.check_positive_int(1.5, "n", "Prim"), TypeError, "must be int"),
    (lambda: validator.check_float_range(1.0, 0.0, 1.0, validator.INC_NEITHER, "beta1", "Adam"), ValueError,
     r"range of \(0.0, 1.0\)"),
    (lambda: validator.check_positive_float(0.0, "eps", "Adam"), ValueError, "eps"),
    (lambda: validator.check_string("foo", ["same", "valid"], "pad_mode", "Conv"), ValueError, "one of"),
    (lambda: validator.check_axis_in_range(4, 4), ValueError, r"\[-4, 4\)"),
    (lambda: validator.check_axis_valid((0, -3), 3), ValueError, "duplicates"),
    (lambda: validator.check_tensor_dtype_valid("x", ms.int32, [ms.float32], "Prim"), TypeError, "'x'"),
    (lambda: validator.check_scalar_or_tensor_types_same({"x": ms.float32, "y": ms.float16},
                                                         [ms.float32, ms.float16], "Prim"), TypeError, "same"),
    (lambda: validator.check_int(3, 2, 99, "k"), ValueError, "unknown relation"),
])
def test_checkparam_errors_name_the_argument(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_ops_function_modules_are_views_of_ops():
    from mycel.ops.function import approximate_equal
    from mycel.ops.function import math_func, nn_func, random_func
    assert approximate_equal is ops.approximate_equal
    assert nn_func.relu is ops.relu and random_func.random_poisson is ops.random_poisson
    assert math_func.F is F
    with pytest.raises(AttributeError, match="no function of that name"):
        math_func.not_an_op  # noqa: B018


def test_dtype_carries_the_module_aliases():
    assert ms.dtype.bool_ is ms.bool_ and ms.dtype.float_ is ms.float32 and ms.dtype.int_ is ms.int64
    assert ms.dtype.double is ms.float64 and list(ms.dtype)[0] in list(ms.dtype)  # still the enum


def test_cell_cls_name_and_its_override():
    class Net(nn.Cell):
        def construct(self, x):
            return x

    class Named(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cls_name = "Custom"

    assert Net().cls_name == "Net" and Net.cls_name == "Net" and Named().cls_name == "Custom"


def test_primitive_set_device():
    op = P.ReLU().set_device("CPU")
    assert op.attrs["primitive_target"] == "CPU"
    with pytest.raises(ValueError, match="CPU only"):
        P.ReLU().set_device("Ascend")


def _sgd(lr, p, g):
    ops.assign_sub(p, lr * g)
    return True


class MapSGD(nn.Optimizer):
    """A user optimizer in MindSpore's idiom: the update through Optimizer.map_reverse."""

    def construct(self, gradients):
        return self.map_reverse(F.partial(_sgd, 0.1), self.parameters, gradients)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_user_optimizer_through_map_reverse_trains(mode):
    ms.set_context(mode=mode)
    try:
        net = nn.Dense(3, 1, weight_init="ones", bias_init="zeros")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), MapSGD(0.1, net.trainable_params()))
        x = np.array([[1.0, 2.0, 3.0]], np.float32)
        y = np.array([[1.0]], np.float32)
        step(Tensor(x), Tensor(y))
        # loss (w.x + b - y)^2: dw = 2 (6 - 1) x, db = 2 (6 - 1)
        np.testing.assert_allclose(net.weight.asnumpy(), 1.0 - 0.1 * 10.0 * x, rtol=1e-6)
        np.testing.assert_allclose(net.bias.asnumpy(), [-1.0], rtol=1e-6)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_random_poisson_takes_a_shape_tensor_and_integer_rates():
    rate = Tensor(np.array([2.0, 50.0], np.float32))
    out = ops.random_poisson(Tensor(np.array([4000], np.int32)), rate, seed=3)
    assert out.shape == (4000, 2)
    np.testing.assert_allclose(out.asnumpy().mean(axis=0), [2.0, 50.0], rtol=0.05)
    irate = ops.random_poisson(Tensor(np.array([4000], np.int64)), Tensor(np.array([3, 9], np.int32)), seed=4,
                               dtype=ms.int32)
    assert irate.dtype == ms.int32
    np.testing.assert_allclose(irate.asnumpy().mean(axis=0), [3.0, 9.0], rtol=0.05)
    with pytest.raises(ValueError, match="must be 1-d"):
        ops.random_poisson(Tensor(np.array([[1, 2]], np.int32)), rate)
    with pytest.raises(TypeError, match="int32 or int64"):
        ops.random_poisson(Tensor(np.array([1.0], np.float32)), rate)
