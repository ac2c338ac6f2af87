"""Frontend -> analysis -> optimizer end to end: the specialized, optimized IR of small functions."""
import math

import numpy as np

from mycel import Tensor, _mycel, ops


def branchy(x, y):
    z = x * y + 1.0
    if z.sum() > 0:
        z = ops.relu(z)
    return z * math.sqrt(4.0)


def straight(x, w):
    h = ops.matmul(x, w, transpose_b=True)
    return ops.relu(h + 0.0) * 1.0


def specialized(fn, *args):
    return _mycel.graph.specialize(_mycel.frontend.parse(fn), *args)


def test_tensor_condition_stays_a_switch_and_python_helpers_fold():
    x = Tensor(np.ones((2, 3), np.float32))
    text = specialized(branchy, x, x)
    assert text.startswith("graph @branchy.1(%x: f32[2, 3], %y: f32[2, 3]) {")
    assert "switch(%4, @branchy_true.1, @branchy_false.1)" in text
    assert "py:" not in text and "Tensor<f32()>{2}" in text  # math.sqrt(4.0) ran at compile time
    assert "sum(%2)" in text  # the reduction's attributes were resolved and folded


def test_straight_line_model_is_flat_after_optimization():
    text = specialized(straight, Tensor(np.ones((4, 3), np.float32)), Tensor(np.ones((5, 3), np.float32)))
    assert text.count("graph @") == 1, text  # nothing left but the entry graph
    assert "matmul[transpose_b=True](%x, %w)" in text and ": f32[4, 5]" in text
    assert "add(" not in text and "mul(" not in text  # x + 0.0 and x * 1.0 simplified away


def test_shapes_and_dtypes_follow_eager_mode():
    x, w = Tensor(np.ones((4, 3), np.float64)), Tensor(np.ones((5, 3), np.float64))
    eager = straight(x, w)
    text = specialized(straight, x, w)
    assert f"f64[{eager.shape[0]}, {eager.shape[1]}]" in text
