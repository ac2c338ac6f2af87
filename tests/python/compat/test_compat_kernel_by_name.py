"""A user's primitive with no Python implementation runs the kernel registered under its name
(MindSpore's rule: a test's `class Shift(PrimitiveWithInfer)` runs the backend's Shift), in both
modes, with its attributes; the shift op itself against numpy and its gradient against finite
differences; a name with no kernel says so."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.ops import Primitive, PrimitiveWithInfer, prim_attr_register

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


class Shift(PrimitiveWithInfer):
    """As MindSpore's test defines it: attributes and infer hooks, no implementation."""

    @prim_attr_register
    def __init__(self, periods=1, axis=-1):
        self.init_prim_io_names(inputs=["x", "fill_value"], outputs=["output"])

    def infer_dtype(self, x_dtype, fill_dtype):
        return x_dtype


class ShiftNet(nn.Cell):
    def __init__(self, periods, axis):
        super().__init__()
        self.shift = Shift(periods, axis)

    def construct(self, x, fill_value):
        return self.shift(x, fill_value)


def np_shift(x, periods, axis, fill):
    """Slices, as pandas' shift: the vacated places hold fill."""
    out = np.full_like(x, fill)
    n = x.shape[axis]
    src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    if abs(periods) < n:
        src[axis] = slice(max(0, -periods), n - max(0, periods))
        dst[axis] = slice(max(0, periods), n - max(0, -periods))
        out[tuple(dst)] = x[tuple(src)]
    return out


@MODES
@pytest.mark.parametrize("dtype,fill", [(np.float32, np.nan), (np.float64, -5.5), (np.int32, 4),
                                        (np.int64, -4), (np.bool_, True)])
@pytest.mark.parametrize("periods,axis", [(2, 0), (-3, 1), (0, 2), (9, -1), (-7, 0)])
def test_user_primitive_runs_the_kernel_of_its_name(mode, dtype, fill, periods, axis):
    mycel.set_context(mode=mode)
    x = (np.random.default_rng(0).random((5, 4, 6)) * 10).astype(dtype)
    out = ShiftNet(periods, axis)(Tensor(x), fill).asnumpy()
    np.testing.assert_array_equal(out, np_shift(x, periods, axis, fill))


@MODES
def test_attributes_changed_after_construction_reach_the_kernel(mode):
    mycel.set_context(mode=mode)
    prim = Primitive("Shift")  # MindSpore's Primitive(name) with attributes added later
    prim.add_prim_attr("periods", -1).add_prim_attr("axis", 0)
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(prim(Tensor(x), 0.0).asnumpy(), np_shift(x, -1, 0, 0.0))
    prim.add_prim_attr("periods", 2)
    np.testing.assert_array_equal(prim(Tensor(x), 7.0).asnumpy(), np_shift(x, 2, 0, 7.0))


@MODES
def test_shift_gradient_matches_finite_differences(mode):
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    fill = np.array(0.7)

    def loss(a, f):
        return (ops.shift(a, f, periods=2, axis=1) * Tensor(w)).sum()

    gx, gf = mycel.grad(loss, grad_position=(0, 1))(Tensor(x), Tensor(fill))

    def num(fn, v):
        g = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            e = np.zeros_like(v)
            e[i] = 1e-6
            g[i] = (fn(v + e) - fn(v - e)) / 2e-6
        return g

    np.testing.assert_allclose(gx.asnumpy(), num(lambda v: (np_shift(v, 2, 1, 0.7) * w).sum(), x), atol=1e-8)
    np.testing.assert_allclose(gf.asnumpy(), num(lambda v: (np_shift(x, 2, 1, float(v)) * w).sum(), fill),
                               atol=1e-8)


@MODES
def test_a_name_with_no_kernel_says_so(mode):
    mycel.set_context(mode=mode)

    class NoSuchKernel(PrimitiveWithInfer):
        @prim_attr_register
        def __init__(self, k=1):
            pass

    with pytest.raises(NotImplementedError, match="'NoSuchKernel' has no kernel: no kernel is registered "
                                                  "under the name 'NoSuchKernel'"):
        NoSuchKernel()(Tensor(np.ones(2)))


def test_bad_fill_value_names_the_op_and_argument():
    with pytest.raises(ValueError, match=r"\[shift\] input 'fill_value' must hold one value.*\(2,\)"):
        Shift(1, 0)(Tensor(np.ones(3, np.float32)), Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match=r"\[shift\] axis 2 is out of range"):
        Shift(1, 2)(Tensor(np.ones((3, 2), np.float32)), 0.0)
