"""MindSpore's module layout: programs that import from MindSpore's paths run in both modes;
results against numpy."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn
from mycel.ops import composite as C
from mycel.ops import functional as F
from mycel.ops import operations as P
from mycel.ops.operations import array_ops, math_ops, nn_ops
from mycel.ops.primitive import Primitive, PrimitiveWithInfer, constexpr, prim_attr_register

MODES = [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE]

_grad_scale = C.MultitypeFuncGraph("grad_scale")


@_grad_scale.register("Number", "Tensor")
def _scale_number(scale, grad):
    return grad * scale


@_grad_scale.register("Tensor", "Tensor")
def _scale_tensor(scale, grad):
    return grad * P.Cast()(scale, mycel.float32) + 100.0


def _plain_mul(a, b):
    return a * b


@constexpr
def _twice(n):
    return n * 2


class ScaleNet(nn.Cell):
    """The MindSpore optimizer pattern: hyper_map(F.partial(multitype_fn, scale), grads)."""

    def __init__(self):
        super().__init__()
        self.hyper_map = C.HyperMap()
        self.map = C.Map()

    def construct(self, grads, s):
        a = self.hyper_map(F.partial(_grad_scale, 0.5), grads)
        b = self.hyper_map(F.partial(_grad_scale, s), grads)
        c = self.hyper_map(_plain_mul, grads, grads)
        d = self.map(F.partial(_plain_mul, 3.0), grads[0:1])
        return a, b, c, d, _twice(grads[0].shape[0])


@pytest.fixture(params=MODES, ids=["pynative", "graph"])
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_hypermap_multitype_partial(mode):
    g0 = np.arange(2, dtype=np.float32) + 1
    g1 = np.arange(3, dtype=np.float32) + 2
    grads = (Tensor(g0), (Tensor(g1),))
    a, b, c, d, n = ScaleNet()(grads, Tensor(np.array(3.0, np.float32)))
    np.testing.assert_allclose(a[0].asnumpy(), g0 * 0.5)
    np.testing.assert_allclose(a[1][0].asnumpy(), g1 * 0.5)
    np.testing.assert_allclose(b[0].asnumpy(), g0 * 3 + 100)
    np.testing.assert_allclose(b[1][0].asnumpy(), g1 * 3 + 100)
    np.testing.assert_allclose(c[1][0].asnumpy(), g1 * g1)
    np.testing.assert_allclose(d[0].asnumpy(), g0 * 3)
    assert int(n) == 4


def test_multitype_no_match_names_the_types():
    with pytest.raises(TypeError, match="grad_scale.*no registered function"):
        _grad_scale("a", Tensor(np.ones(2, np.float32)))
    with pytest.raises(TypeError, match="unknown type name 'Tensr'"):
        C.MultitypeFuncGraph("x").register("Tensr")


def test_operation_submodules_and_functional_aliases():
    x = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    assert math_ops.MatMul is P.MatMul and nn_ops.ReLU is P.ReLU and array_ops.Reshape is P.Reshape
    np.testing.assert_allclose(math_ops.MatMul()(Tensor(x), Tensor(x)).asnumpy(), x @ x)
    np.testing.assert_allclose(F.tensor_add(Tensor(x), Tensor(x)).asnumpy(), x + x)
    np.testing.assert_allclose(F.reduce_sum(Tensor(x)).asnumpy(), x.sum())
    assert F.tuple_len((1, 2, 3)) == 3 and F.make_tuple(1, 2) == (1, 2)
    assert C.GradOperation is mycel.ops.GradOperation
    np.testing.assert_allclose(C.zeros_like(Tensor(x)).asnumpy(), np.zeros_like(x))


class _Fold(PrimitiveWithInfer):
    @prim_attr_register
    def __init__(self, factor=2):
        self.init_prim_io_names(inputs=["x"], outputs=["y"])

    def infer_value(self, x):
        return None if x is None else x * self.factor


def test_user_primitives():
    p = _Fold(factor=3)
    assert p.factor == 3 and p.attrs["factor"] == 3 and p.attrs["input_names"] == ["x"]
    assert p(4) == 12
    bare = Primitive("MyOp")
    assert bare.name == "MyOp"
    with pytest.raises(NotImplementedError, match="'MyOp' has no kernel"):
        bare(Tensor(np.ones(2, np.float32)))
    relu = P.ReLU().add_prim_attr("note", 1)
    assert relu.attrs["note"] == 1
    np.testing.assert_allclose(relu(Tensor(np.array([-1.0, 2.0], np.float32))).asnumpy(), [0.0, 2.0])


def test_common_log_and_paths():
    from mycel.common import Parameter, ParameterTuple, dtype as mstype, mutable
    from mycel.common.initializer import initializer
    from mycel.common.initializer import One
    from mycel import log as logger
    w = Parameter(initializer(One(), (2, 2), mstype.float32), name="w")
    np.testing.assert_allclose(w.asnumpy(), np.ones((2, 2)))
    assert isinstance(ParameterTuple([w]), tuple)
    t = (Tensor(np.ones(1, np.float32)),)
    assert mutable(t) is t
    with pytest.raises(TypeError, match="0-d Tensor"):
        mutable(3)
    assert logger.get_level() in "01234"
    logger.info("compat test")


def test_serialization_export_writes_a_loadable_model(tmp_path):
    """train.serialization.export (MindSpore's path) is the real exporter: the MINDIR file runs in
    the lite runtime to the Cell's output."""
    import mycel.lite
    from mycel.train.serialization import export
    net = nn.Dense(2, 3)
    x = np.array([[1.0, -2.0]], np.float32)
    export(net, Tensor(x), file_name=str(tmp_path / "m"))
    out = mycel.lite.Session.from_file(str(tmp_path / "m.mindir")).run([x])[0]
    np.testing.assert_allclose(np.asarray(out), net(Tensor(x)).asnumpy(), rtol=1e-6, atol=1e-6)


class _Square(nn.Cell):
    def construct(self, x, y):
        return x * x * y


def test_nn_grad_jvp_vjp_vs_closed_form():
    from mycel.nn.grad import Jvp, Vjp
    x = np.array([1.0, 2.0], np.float32)
    y = np.array([3.0, 4.0], np.float32)
    v = np.array([1.0, -1.0], np.float32)
    out, jv = Jvp(_Square())(Tensor(x), Tensor(y), (Tensor(v), Tensor(v)))
    np.testing.assert_allclose(out.asnumpy(), x * x * y)
    np.testing.assert_allclose(jv.asnumpy(), 2 * x * y * v + x * x * v, rtol=1e-6)
    out, (gx, gy) = Vjp(_Square())(Tensor(x), Tensor(y), Tensor(v))
    np.testing.assert_allclose(gx.asnumpy(), 2 * x * y * v, rtol=1e-6)
    np.testing.assert_allclose(gy.asnumpy(), x * x * v, rtol=1e-6)


def _apply_twice(f, x):
    return f(x), f(x, 3.0)


def _nested_defaults(x):
    def scale(v, k=2.0):  # a nested function called through a variable fills its defaults
        return v * k
    g = scale
    return _apply_twice(g, x)


def _is_tuple_of_function(x):
    pair = (_plain_mul, 1.0)
    return x * 2.0 if isinstance(pair, tuple) and not isinstance(_plain_mul, tuple) else x


def test_graph_mode_function_values():
    x = Tensor(np.array([1.0, 2.0], np.float32))
    a, b = mycel.jit(_nested_defaults)(x)
    np.testing.assert_allclose(a.asnumpy(), [2.0, 4.0])
    np.testing.assert_allclose(b.asnumpy(), [3.0, 6.0])
    # isinstance on a tuple holding a function, and on a function itself, is decided when compiling
    np.testing.assert_allclose(mycel.jit(_is_tuple_of_function)(x).asnumpy(), [2.0, 4.0])
