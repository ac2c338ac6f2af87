"""Primitives defined in Python, as MindSpore's tests write them: a PrimitiveWithInfer subclass
whose computation is registered with vm_impl_registry and whose gradient with bprop_getters runs
in both modes (infer_shape/infer_dtype give graph mode its output signature), against numpy and
finite differences; infer_value still folds to a constant; a primitive with nothing behind it
says so."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.ops import PrimitiveWithCheck, PrimitiveWithInfer, prim_attr_register
from mycel.ops._grad.grad_base import bprop_getters
from mycel.ops._grad_experimental.grad_base import bprop_getters as bprop_getters_2x
from mycel.ops.vm_impl_registry import get_vm_impl_fn, vm_impl_registry as vm_impl_getters

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])


class ScaledCube(PrimitiveWithInfer):
    """y = scale * x**3, computed by its vm_impl in numpy."""

    @prim_attr_register
    def __init__(self, scale=1.0):
        self.init_prim_io_names(inputs=["x"], outputs=["y"])

    def infer_shape(self, x_shape):
        return x_shape

    def infer_dtype(self, x_dtype):
        return x_dtype


@vm_impl_getters.register(ScaledCube)
def _vm_impl_scaled_cube(self):
    def vm_impl(x):
        x = x.asnumpy()
        return Tensor(self.scale * x ** 3)
    return vm_impl


@bprop_getters.register(ScaledCube)
def _get_bprop_scaled_cube(self):
    def bprop(x, out, dout):
        return (dout * 3 * self.scale * x * x,)
    return bprop


class SplitSum(PrimitiveWithInfer):
    """Two outputs: the row sums (N,) and the column maxima (M,) of an (N, M) matrix."""

    def __init__(self):
        super().__init__("SplitSum")

    def infer_shape(self, x_shape):
        return [x_shape[0]], [x_shape[1]]

    def infer_dtype(self, x_dtype):
        return x_dtype, x_dtype


@vm_impl_getters.register("SplitSum")
def _vm_impl_split_sum(self):
    def vm_impl(x):
        a = x.asnumpy()
        return a.sum(1), a.max(0)
    return vm_impl


class _Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.cube = ScaledCube(scale=2.5)
        self.split = SplitSum()

    def construct(self, x, m):
        rows, cols = self.split(m)
        return self.cube(x) + 1, rows, cols


@MODES
def test_registered_implementation_runs_in_both_modes(mode):
    mycel.set_context(mode=mode)
    try:
        rng = np.random.default_rng(9)
        x, m = rng.standard_normal(5), rng.standard_normal((3, 4))
        y, rows, cols = _Net()(Tensor(x), Tensor(m))
        np.testing.assert_allclose(y.asnumpy(), 2.5 * x ** 3 + 1)
        np.testing.assert_allclose(rows.asnumpy(), m.sum(1))
        np.testing.assert_allclose(cols.asnumpy(), m.max(0))

        def loss(t):
            return ops.sum(ScaledCube(scale=2.5)(t) * Tensor(np.arange(5.0)))

        f = mycel.jit(loss) if mode == mycel.GRAPH_MODE else loss
        g = mycel.grad(f)(Tensor(x)).asnumpy()
        num = np.array([((2.5 * (x + e) ** 3) @ np.arange(5.0) - (2.5 * (x - e) ** 3) @ np.arange(5.0)) / 2e-6
                        for e in np.eye(5) * 1e-6])
        np.testing.assert_allclose(g, num, rtol=1e-6)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_registries_and_folding():
    assert bprop_getters_2x is bprop_getters
    assert get_vm_impl_fn(ScaledCube()) is not None and get_vm_impl_fn(ops.Add()) is None
    assert ScaledCube(scale=3.0).attrs["scale"] == 3.0

    class Const(PrimitiveWithInfer):
        def __init__(self):
            super().__init__("Const")

        def infer_value(self, x):
            return 7

    assert Const()(Tensor(np.ones(2))) == 7


def test_primitive_without_implementation_says_so():
    class Bare(PrimitiveWithInfer):
        def __init__(self):
            super().__init__("Bare")

        def infer_shape(self, s):
            return s

        def infer_dtype(self, t):
            return t

    with pytest.raises(NotImplementedError, match="'Bare' has no kernel"):
        Bare()(Tensor(np.ones(2)))

    class NoShape(PrimitiveWithInfer):
        def __init__(self):
            super().__init__("NoShape")

    vm_impl_getters.register(NoShape)(lambda self: (lambda x: x))
    with pytest.raises(TypeError, match="needs infer_shape"):
        NoShape()(Tensor(np.ones(2)))

    class Checked(PrimitiveWithCheck):
        def __init__(self):
            super().__init__("Checked")

        def check_shape(self, s):
            if len(s) != 1:
                raise ValueError(f"Checked: expects a vector, got shape {s}")

    vm_impl_getters.register(Checked)(lambda self: (lambda x: Tensor(x.asnumpy() * 2)))
    np.testing.assert_allclose(Checked()(Tensor(np.ones(2))).asnumpy(), [2.0, 2.0])
    with pytest.raises(ValueError, match="expects a vector"):
        Checked()(Tensor(np.ones((2, 2))))
