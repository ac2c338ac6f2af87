"""PrimitiveWithCheck subclasses with an implementation registered in vm_impl_registry, in
graph mode as well as eagerly (MindSpore's idioms: check_shape/check_dtype raising on bad
input, the implementation in numpy): the output signature comes from infer_shape/infer_dtype
where the subclass has them, else from a trial run of the implementation; gradients from a
bprop registered with bprop_getters. Results against numpy."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops
from mycel.ops import PrimitiveWithCheck, prim_attr_register
from mycel.ops._grad.grad_base import bprop_getters
from mycel.ops.vm_impl_registry import vm_impl_registry

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


class RowNorms(PrimitiveWithCheck):
    """Euclidean norm of each row of a float matrix: (N, M) -> (N,), no infer hooks."""

    @prim_attr_register
    def __init__(self, power=2.0):
        self.init_prim_io_names(inputs=["x"], outputs=["y"])

    def check_shape(self, x_shape):
        if len(x_shape) != 2:
            raise ValueError(f"RowNorms: x must be a matrix, got shape {list(x_shape)}")

    def check_dtype(self, x_dtype):
        if x_dtype not in (ms.float32, ms.float64):
            raise TypeError(f"RowNorms: x must be float32 or float64, got {x_dtype}")


@vm_impl_registry.register(RowNorms)
def _vm_impl_row_norms(self):
    def vm_impl(x):
        x = x.asnumpy()
        return Tensor((np.abs(x) ** self.power).sum(axis=1) ** (1 / self.power))
    return vm_impl


class SplitHalves(PrimitiveWithCheck):
    """(first half, second half) of a vector, and their dot product as int64 counts: several
    outputs of different shapes and dtypes, signature by a trial run."""

    def __init__(self):
        super().__init__("SplitHalves")

    def check_shape(self, x_shape):
        if len(x_shape) != 1 or x_shape[0] % 2:
            raise ValueError(f"SplitHalves: x must be a vector of even length, got {list(x_shape)}")


@vm_impl_registry.register(SplitHalves)
def _vm_impl_split(self):
    def vm_impl(x):
        a = x.asnumpy()
        h = a.shape[0] // 2
        return Tensor(a[:h].copy()), Tensor(a[h:].copy()), Tensor(np.array([h], np.int64))
    return vm_impl


class Doubled(PrimitiveWithCheck):
    """2 x with infer hooks (the fallback a PrimitiveWithCheck may also define) and a bprop."""

    def __init__(self):
        super().__init__("Doubled")

    def check_dtype(self, x_dtype):
        if x_dtype != ms.float32:
            raise TypeError(f"Doubled: x must be float32, got {x_dtype}")

    def infer_shape(self, x_shape):
        return x_shape

    def infer_dtype(self, x_dtype):
        return x_dtype


@vm_impl_registry.register(Doubled)
def _vm_impl_doubled(self):
    return lambda x: Tensor(x.asnumpy() * 2)


@bprop_getters.register(Doubled)
def _bprop_doubled(self):
    def bprop(x, out, dout):
        return (dout * 2,)
    return bprop


class UsesRowNorms(nn.Cell):
    def __init__(self):
        super().__init__()
        self.norms = RowNorms(power=3.0)

    def construct(self, x):
        return self.norms(x) + 1


X = np.random.default_rng(3).normal(size=(4, 5))


def _ref_norms(x, p=3.0):
    return (np.abs(x) ** p).sum(axis=1) ** (1 / p)


@MODES
def test_cell_with_checked_primitive(mode):
    ms.set_context(mode=mode)
    net = UsesRowNorms()
    for x in (X, X[:2].astype(np.float32)):  # a second signature: a second trial run
        out = net(Tensor(x))
        assert out.shape == (x.shape[0],) and out.dtype == (ms.float64 if x.dtype == np.float64 else ms.float32)
        np.testing.assert_allclose(out.asnumpy(), _ref_norms(x.astype(np.float64)) + 1, rtol=1e-5)


@MODES
def test_checks_run_in_both_modes(mode):
    # Graph mode runs the checks while it compiles, inside the host operator's inference, which
    # reports a hook's exception as a RuntimeError carrying its type and message.
    ms.set_context(mode=mode)
    net = UsesRowNorms()
    graph = mode == ms.GRAPH_MODE
    with pytest.raises(RuntimeError if graph else ValueError, match="ValueError: RowNorms: x must be a matrix"
                       if graph else "must be a matrix"):
        net(Tensor(np.ones(3)))
    with pytest.raises(RuntimeError if graph else TypeError, match="float32 or float64"):
        net(Tensor(np.ones((2, 2), np.int32)))


@MODES
def test_several_outputs_by_trial_run(mode):
    ms.set_context(mode=mode)
    prim = SplitHalves()

    def f(x):
        a, b, n = prim(x)
        return a * b, n

    run = ms.jit(f) if mode == ms.GRAPH_MODE else f
    x = np.arange(6, dtype=np.float32)
    prod, n = run(Tensor(x))
    np.testing.assert_allclose(prod.asnumpy(), x[:3] * x[3:])
    assert n.dtype == ms.int64 and n.asnumpy().tolist() == [3]
    with pytest.raises(RuntimeError if mode == ms.GRAPH_MODE else ValueError, match="even length"):
        run(Tensor(np.arange(5, dtype=np.float32)))


@MODES
def test_infer_hooks_and_bprop(mode):
    ms.set_context(mode=mode)
    prim = Doubled()

    def loss(x):
        return ops.sum(prim(x) * x)

    x = np.array([1.0, -2.0, 0.5], np.float32)
    g = ms.grad(loss)(Tensor(x))
    np.testing.assert_allclose(g.asnumpy(), 4 * x, rtol=1e-6)  # d sum(2 x * x) = 4 x
    with pytest.raises(RuntimeError if mode == ms.GRAPH_MODE else TypeError, match="must be float32"):
        (ms.jit(loss) if mode == ms.GRAPH_MODE else loss)(Tensor(x.astype(np.float64)))
