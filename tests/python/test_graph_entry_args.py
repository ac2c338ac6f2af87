"""How a compiled function or construct takes its arguments: keywords and defaults bound as Python
binds them, and Python scalars / None / strings as compile-time constants (one specialization
per value), each compared with the same code run eagerly."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


def t(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def scale_shift(x, n, shift=0.5, flag=True, mode="add"):
    y = x * n
    if flag:
        y = y + shift
    if mode == "sub":
        y = y - 1.0
    return y


@pytest.mark.parametrize("args,kwargs", [
    ((3,), {}), ((2.5,), {}), ((3,), {"flag": False}), ((-1,), {"shift": 2, "mode": "sub"}),
    ((), {"n": 4, "flag": True}), ((True, 1.5, False, "sub"), {}),
])
def test_scalar_inputs_and_defaults_match_eager(args, kwargs):
    x = t(3, 4)
    want = scale_shift(x, *args, **kwargs).asnumpy()  # eager: ops run one by one
    got = mycel.jit(scale_shift)(x, *args, **kwargs).asnumpy()
    np.testing.assert_array_equal(got, want)


def test_each_scalar_value_compiles_once():
    f = mycel.jit(scale_shift)
    x = t(2, 2, seed=1)
    for n in (1, 2, 1, 2, 2):
        np.testing.assert_array_equal(f(x, n).asnumpy(), (x.asnumpy() * n + 0.5).astype(np.float32))
    assert f._compiled.graph.num_programs == 2
    # The folded scalar is not a Program input: the IR has one tensor parameter.
    ir = f._compiled.graph.ir(x, 3, 0.5, True, "add")
    assert ir.splitlines()[0].count("%") == 1, ir


class Affine(nn.Cell):
    def construct(self, x, scale=2.0, bias=None, relu=False):
        y = x * scale
        if bias is not None:
            y = y + bias
        if relu:
            y = ops.relu(y)
        return y


@pytest.mark.parametrize("args,kwargs", [
    ((), {}), ((3.0,), {}), ((), {"bias": "x"}), ((1.0,), {"bias": "x", "relu": True}),
    ((-1.0, None, True), {}),
])
def test_cell_keywords_and_defaults_in_graph_mode_match_pynative(args, kwargs):
    net, x = Affine(), t(4, 3, seed=2)
    kwargs = {k: (x if v == "x" else v) for k, v in kwargs.items()}
    want = net(x, *args, **kwargs).asnumpy()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    got = net(x, *args, **kwargs)
    np.testing.assert_array_equal(got.asnumpy(), want)
    assert net._compiled is not None  # compiled, not run eagerly


def test_wrong_calls_raise_type_error_with_the_signature():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net, x = Affine(), t(2, 2)
    with pytest.raises(TypeError, match=r"Affine\(x, scale=2.0, bias=None, relu=False\).*too many"):
        net(x, 1.0, None, True, 5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gain'"):
        net(x, gain=2.0)
    f = mycel.jit(scale_shift)
    with pytest.raises(TypeError, match="missing a required argument: 'n'"):
        f(x)


def test_keyword_only_parameters_and_kwargs_of_a_jit_function_are_bound_by_name():
    # MindSpore's jit functions take keyword-only parameters and **kwargs: each set of keyword
    # names compiles an entry of its own that passes them on by name.
    def f(x, *, gain=2.0, **extra):
        y = x * gain
        if "bias" in extra:
            y = y + extra["bias"]
        return y
    g = mycel.jit(f)
    x = t(2)
    np.testing.assert_allclose(g(x).asnumpy(), x.asnumpy() * 2.0)
    np.testing.assert_allclose(g(x, gain=3.0).asnumpy(), x.asnumpy() * 3.0)
    np.testing.assert_allclose(g(x, bias=x).asnumpy(), x.asnumpy() * 3.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gian'|got an unexpected"):
        mycel.jit(lambda x, *, gain=1.0: x * gain)(x, gian=2.0)


def test_two_lambdas_on_one_line_each_compile_their_own():
    x = t(3, seed=4)
    outer = lambda: mycel.jit(lambda a, b: a * b + 1.0)(x, (x, x)[0])  # noqa: E731
    np.testing.assert_allclose(outer().asnumpy(), x.asnumpy() * x.asnumpy() + 1.0, rtol=1e-6)
    pair = mycel.jit(lambda p: p[0] - p[1])
    np.testing.assert_array_equal(pair((x, x)).asnumpy(), np.zeros(3, np.float32))


@mycel.jit
def _scaled(x, n=2):
    return x * n


def test_jit_function_called_from_compiled_code_is_parsed_in_place():
    @mycel.jit
    def outer(x):
        return _scaled(x) + _scaled(x, 3)

    x = t(3, seed=5)
    np.testing.assert_array_equal(outer(x).asnumpy(), (x.asnumpy() * 2 + x.asnumpy() * 3))

    class Net(nn.Cell):
        @mycel.jit
        def construct(self, x):  # MindSpore's pattern: a jit construct
            return _scaled(x) * 2

    want = Net()(x).asnumpy()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_array_equal(Net()(x).asnumpy(), want)
    np.testing.assert_array_equal(want, x.asnumpy() * 4)


def test_graph_grad_of_a_jit_function_with_scalar_and_default_arguments():
    @mycel.jit
    def f(x, n, flag=True):
        y = x * x * n
        if flag:
            y = y + x
        return y.sum()

    x = Tensor(np.array([1.0, 2.0, 3.0], np.float32))
    eager = mycel.grad(lambda v: f(v, 3))(x).asnumpy()  # PyNative records the jit call
    np.testing.assert_array_equal(eager, 6 * x.asnumpy() + 1)  # d/dx (3x^2 + x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_array_equal(mycel.grad(f)(x, 3).asnumpy(), eager)
    np.testing.assert_array_equal(mycel.grad(f)(x, 2, False).asnumpy(), 4 * x.asnumpy())


class _Attention(nn.Cell):
    """Self-attention over a variable sequence length: reshapes through b * s."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Dense(8, 8)

    def construct(self, x):
        b, s, d = x.shape
        y = self.proj(x.reshape(b * s, d)).reshape(b, s, d)
        return ops.softmax(ops.matmul(y, y.transpose(0, 2, 1)) / (d ** 0.5), axis=-1)


def test_variable_sequence_length_compiles_once_and_matches_eager():
    net = _Attention()
    xs = [t(2, s, 8, seed=20 + s) for s in (3, 7, 1, 16)]
    eager = [net(x).asnumpy() for x in xs]
    net.set_inputs(Tensor(shape=[2, None, 8], dtype=mycel.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for x, e in zip(xs, eager):
        np.testing.assert_allclose(net(x).asnumpy(), e, rtol=1e-6, atol=1e-7)
    assert net._compiled.graph.num_programs == 1


def test_reshape_with_two_run_time_sizes_is_a_located_error():
    class Two(nn.Cell):
        def construct(self, x):
            return x.reshape(x.shape[0] * 1, x.shape[1], 2)

    net = Two()
    net.set_inputs(Tensor(shape=[None, None, 2], dtype=mycel.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    with pytest.raises(NotImplementedError, match=r"2 values known only at run time(.|\n)*test_graph_entry_args.py"):
        net(t(2, 3, 2))


class _Info(nn.Cell):
    """MindSpore's tensor-info primitives and functions, and the primitive assign/depend."""

    def __init__(self):
        super().__init__()
        from mycel.ops import operations as P
        self.shape, self.rank, self.size, self.dtype = P.Shape(), P.Rank(), P.Size(), P.DType()
        self.assign, self.depend = P.Assign(), P.Depend()
        self.w = mycel.Parameter(Tensor(np.zeros(3, np.float32)), name="w")

    def construct(self, x):
        b, n = self.shape(x)
        y = x.reshape(b * n) * self.rank(x) + self.size(x)
        if self.dtype(x) == mycel.float32 and ops.dtype(x) == mycel.float32:
            y = y + ops.rank(x) * ops.size(x) + ops.shape(x)[1]
        y = self.depend(y, self.assign(self.w, x[0] * 2))
        return ops.unsqueeze(y, 0)


def test_tensor_info_primitives_and_functions_match_in_both_modes():
    x = t(2, 3, seed=6)
    net = _Info()
    eager = net(x).asnumpy()
    w_eager = net.w.asnumpy().copy()
    np.testing.assert_array_equal(eager, (x.asnumpy().reshape(1, 6) * 2 + 6 + 2 * 6 + 3))
    np.testing.assert_array_equal(w_eager, x.asnumpy()[0] * 2)
    net.w.set_data(Tensor(np.zeros(3, np.float32)))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_array_equal(net(x).asnumpy(), eager)
    np.testing.assert_array_equal(net.w.asnumpy(), w_eager)
    ir = net._compiled.graph.ir(x)
    assert "shape(" not in ir and "rank" not in ir, ir  # folded to constants


class _ZerosOfShape(nn.Cell):
    def construct(self, x, shape, pair):
        return ops.reshape(x, shape) * pair[0] + pair[1][0]


def test_tuple_of_scalars_is_one_constant():
    """A tuple (nested, or a list) of Python scalars passed to construct is a compile-time constant
    like a scalar: a shape argument compiles, one specialization per value, matching eager."""
    x = t(6)
    net = _ZerosOfShape()
    want = [net(x, s, (2.0, [1.0])).asnumpy() for s in ((2, 3), (3, 2))]
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for s, w in zip(((2, 3), (3, 2)), want):
        got = net(x, s, (2.0, [1.0])).asnumpy()
        assert got.shape == s
        np.testing.assert_allclose(got, w, rtol=1e-6)
        np.testing.assert_allclose(got, x.asnumpy().reshape(s) * 2.0 + 1.0, rtol=1e-6)


class _ScaleBy(nn.Cell):
    def construct(self, pair):
        x, k = pair
        return x * k


class _StarArgs(nn.Cell):
    def construct(self, x, *rest):
        y = x
        for r in rest:
            y = y * r if r is not None else y + 1.0
        return y


@pytest.mark.parametrize("np_scalar", [False, True])
def test_scalars_inside_a_tuple_with_tensors_are_constants(np_scalar):
    """A tuple that holds tensors and Python scalars (or None): the tensors are run-time inputs,
    the scalars compile-time constants (one specialization per value), in a tuple argument and
    in *args, matching eager."""
    x = t(2, 3)
    k3 = np.float32(3.0) if np_scalar else 3.0
    cases = [(_ScaleBy(), ((x, k3),)), (_ScaleBy(), ((x, 2),)),
             (_StarArgs(), (x, 2.0)), (_StarArgs(), (x, x, None, 0.5)), (_StarArgs(), (x, (2, 3)[0]))]
    want = [net(*args).asnumpy() for net, args in cases]
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for (net, args), w in zip(cases, want):
        np.testing.assert_allclose(net(*args).asnumpy(), w, rtol=1e-6)
    net = _ScaleBy()
    for k in (4.0, 5.0, 4.0):  # two specializations; the second 4.0 reuses the first
        np.testing.assert_allclose(net((x, k)).asnumpy(), x.asnumpy() * k, rtol=1e-6)
    assert net._graph_program().graph.num_programs == 2


class _Forward(nn.Cell):
    """A wrapper Cell whose construct takes **kwargs and passes them on by name."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, x, y=None, **kwargs):
        flip = kwargs["flip"] if "flip" in kwargs else False
        return self.fn(x, y, kwargs.get("scale", 1.0), flip)


class _Gain(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = mycel.Parameter(Tensor(np.array([2.0, 3.0], np.float32)), name="w")

    def construct(self, x, *, gain=2.0, shift=None):
        y = x * self.w * gain
        return y if shift is None else y + shift


def _scale_or_sum(x, y=None, scale=1.0, flip=False):
    z = x * scale if y is None else (x + y) * scale
    return -z if flip else z


def test_cell_construct_with_keyword_only_parameters_and_kwargs_in_graph_mode():
    """A Cell's construct may take keyword-only parameters and **kwargs in graph mode too (each
    set of keyword names compiles an entry of its own), matching PyNative."""
    x = Tensor(np.array([1.0, -2.0], np.float32))
    calls = [(_Forward(_scale_or_sum), (x,), {}), (_Forward(_scale_or_sum), (x,), {"scale": 3.0}),
             (_Forward(_scale_or_sum), (x, x), {"flip": True, "scale": 0.5}),
             (_Gain(), (x,), {}), (_Gain(), (x,), {"gain": 4.0, "shift": x})]
    want = [net(*a, **k).asnumpy() for net, a, k in calls]
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for (net, a, k), w in zip(calls, want):
        np.testing.assert_allclose(net(*a, **k).asnumpy(), w, rtol=1e-6)
    net = _Gain()
    net.w.set_data(Tensor(np.array([1.0, 1.0], np.float32)))  # the entry reads the Parameter's data
    np.testing.assert_allclose(net(x, gain=5.0).asnumpy(), x.asnumpy() * 5.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gian'"):
        net(x, gian=2.0)


def test_dict_get_in_graph_mode():
    """d.get(key[, default]) on a dict built in compiled code: the item, or the default (None)."""
    @mycel.jit
    def f(x, y):
        d = {"x": x, "k": 3.0}
        missing = d.get("w")
        return d.get("x") * d.get("k", 1.0) + d.get("z", y), missing is None

    x, y = t(3), t(3, seed=1)
    out, none_missing = f(x, y)
    np.testing.assert_allclose(out.asnumpy(), x.asnumpy() * 3.0 + y.asnumpy(), rtol=1e-6)
    assert bool(none_missing)
