"""Elementwise ops: errors raised for bad shapes, dtypes and attributes (naming the op), plus the
edge behaviours the op table cannot express (None bounds, Python scalars, integer powers)."""
import numpy as np
import pytest

import mycel
from mycel import ops

T = mycel.Tensor


def f32(*shape):
    return T(np.ones(shape, np.float32))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "floor_div", "mod", "pow", "maximum",
                                "minimum", "atan2", "equal", "less", "logical_and"])
def test_binary_broadcast_mismatch_names_both_shapes(op):
    with pytest.raises(ValueError, match=rf"\[{op}\].*\(2, 3\).*\(4,\)"):
        getattr(ops, op)(f32(2, 3), f32(4))


def test_select_broadcast_mismatch():
    with pytest.raises(ValueError, match=r"\[select\].*\(2, 3\).*\(5,\)"):
        ops.select(T(np.ones((2, 3), bool)), f32(2, 3), f32(5))


def test_clip_broadcast_mismatch():
    with pytest.raises(ValueError, match=r"\[clip_by_value\].*\(2, 3\).*\(2,\)"):
        ops.clip_by_value(f32(2, 3), f32(2), f32(1))


@pytest.mark.parametrize("op", ["sigmoid", "gelu", "silu", "softplus", "elu", "leaky_relu",
                                "relu6", "tanh", "erf", "reciprocal"])
@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_float_only_ops_reject_ints(op, dtype):
    if op == "reciprocal" and dtype is np.int32:
        pytest.skip("reciprocal takes integers (MindSpore's P.Inv: 1/x truncated, op_cases/extended_dtypes.py)")
    with pytest.raises(TypeError, match=rf"\[{op}\].*unsupported dtype"):
        getattr(ops, op)(T(np.ones(3, dtype)))


@pytest.mark.parametrize("op,dtype", [("neg", np.bool_), ("sign", np.bool_),
                                      ("sub", np.bool_), ("floor_div", np.bool_), ("mod", np.bool_),
                                      ("pow", np.bool_), ("square", np.bool_), ("floor", np.bool_)])
def test_unsupported_dtype(op, dtype):
    x = T(np.ones(3, dtype))
    args = (x,) if op in ("neg", "sign", "square", "floor") else (x, x)
    with pytest.raises(TypeError, match=rf"\[{op}\]"):
        getattr(ops, op)(*args)


def test_gelu_bad_approximate():
    with pytest.raises(ValueError, match=r"\[gelu\].*approximate.*'foo'"):
        ops.gelu(f32(3), approximate="foo")


def test_leaky_relu_bad_alpha_type():
    with pytest.raises(TypeError, match=r"\[leaky_relu\].*alpha"):
        ops.leaky_relu(f32(3), alpha="x")


def test_leaky_relu_negative_slope_alias():
    x = np.array([-2.0, 3.0], np.float32)
    np.testing.assert_allclose(ops.leaky_relu(T(x), negative_slope=0.5).asnumpy(), [-1.0, 3.0])


def test_softplus_bad_attr_type():
    with pytest.raises(TypeError, match=r"\[softplus\].*beta"):
        ops.softplus(f32(3), beta="big")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_select_requires_bool_cond(dtype):
    with pytest.raises(TypeError, match=r"\[select\].*'cond' must be bool.*"):
        ops.select(T(np.ones(3, dtype)), f32(3), f32(3))


def test_clip_needs_a_bound():
    with pytest.raises(ValueError, match=r"\[clip_by_value\].*both be None"):
        ops.clip_by_value(f32(3), None, None)


def test_clip_with_one_bound_and_scalars():
    x = np.array([-3.0, 0.5, 4.0], np.float32)
    np.testing.assert_array_equal(ops.clip_by_value(T(x), None, 1.0).asnumpy(), [-3.0, 0.5, 1.0])
    np.testing.assert_array_equal(ops.clip_by_value(T(x), 0.0, None).asnumpy(), [0.0, 0.5, 4.0])
    out = ops.clip_by_value(T(x), -1, 2)
    assert out.dtype == mycel.float32
    np.testing.assert_array_equal(out.asnumpy(), [-1.0, 0.5, 2.0])
    xi = np.array([-5, 0, 9], np.int32)
    out = ops.clip_by_value(T(xi), clip_value_min=-1, clip_value_max=3)
    assert out.dtype == mycel.int32
    np.testing.assert_array_equal(out.asnumpy(), [-1, 0, 3])


def test_select_with_python_scalars():
    c = np.array([True, False, True])
    x = np.array([1.0, 2.0, 3.0], np.float32)
    out = ops.select(T(c), T(x), 0.0)
    assert out.dtype == mycel.float32
    np.testing.assert_array_equal(out.asnumpy(), [1.0, 0.0, 3.0])


def test_integer_pow_negative_exponent_raises():
    with pytest.raises(ValueError, match=r"\[pow\].*negative integer powers"):
        ops.pow(T(np.array([2, 3], np.int32)), T(np.array([1, -1], np.int32)))
    # numpy's own rule, for reference
    with pytest.raises(ValueError):
        np.power(np.array([2], np.int32), np.array([-1], np.int32))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_integer_division_by_zero_does_not_crash(dtype):
    x = np.array([7, 0, 5], dtype)
    y = np.zeros(3, dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ops.floor_div(T(x), T(y)).asnumpy(), np.floor_divide(x, y))
        np.testing.assert_array_equal(ops.mod(T(x), T(y)).asnumpy(), np.remainder(x, y))


def test_unknown_attribute():
    with pytest.raises(TypeError, match=r"\[elu\].*unexpected"):
        ops.elu(f32(3), beta=1.0)
