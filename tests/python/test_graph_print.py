"""print in graph mode: tensors print their values as eager print does (numpy's str of the array,
written by the C++ VM without calling into Python), f-strings with run-time tensors print the
text and the values, and every print of a compiled function runs. The reference for a tensor is
numpy's str of the same array; the eager output of the same function is compared as well."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn


def show(x):
    print(x)
    return x + 0


def printed(fn, capfd, *arrays, graph=True):
    """What fn prints when run on Tensors of `arrays`, compiled or eagerly."""
    capfd.readouterr()
    (mycel.jit(fn) if graph else fn)(*[Tensor(a) for a in arrays])
    return capfd.readouterr().out


rng = np.random.default_rng(0)
CASES = {
    "float32_2d": np.array([[1.5, 2.0, -3.25], [0.1, 100.0, 7.0]], np.float32),
    "float32_random": rng.standard_normal((4, 5)).astype(np.float32),
    "float32_scientific": np.array([1e-5, 1.0, 12345.678], np.float32),
    "float32_big": np.array([1e6, 2.5], np.float32),
    "float32_nan_inf": np.array([1.5, np.nan, -np.inf, np.inf, -0.0], np.float32),
    "float32_integral": np.arange(6, dtype=np.float32).reshape(2, 3),
    "float32_long_row": (rng.standard_normal(30) * 10).astype(np.float32),
    "float64": np.array([np.pi, -1e-3, 2.0]),
    "float16": np.array([0.1, 65504.0, -2.5], np.float16),
    "int32": np.array([[1, -20, 300], [4, 5, 6]], np.int32),
    "int64": np.array([2**40, -7, 0], np.int64),
    "int8": np.array([-128, 0, 127], np.int8),
    "uint8": np.array([0, 9, 255], np.uint8),
    "bool": np.array([[True, False], [False, True]]),
    "bool_all_true": np.array([True, True]),
    "0d_float32": np.array(0.1, np.float32),
    "0d_float32_integral": np.array(3.0, np.float32),
    "0d_float32_small": np.array(2.5e-7, np.float32),
    "0d_float64": np.array(-1.0 / 3.0),
    "0d_int32": np.array(-42, np.int32),
    "0d_bool": np.array(False),
    "empty_1d": np.zeros((0,), np.float32),
    "empty_3d": np.zeros((2, 0, 3), np.int32),
    "3d": rng.standard_normal((2, 3, 4)).astype(np.float32),
    "3d_int": np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    "summarized_1d": np.arange(2000, dtype=np.float32) / 7,
    "summarized_2d": rng.standard_normal((40, 30)).astype(np.float32),
    "summarized_3d_int": np.arange(2000, dtype=np.int32).reshape(2, 10, 100),
    "summarized_bool": rng.standard_normal((3, 400)) > 0,
}


@pytest.mark.parametrize("name", CASES)
def test_tensor_prints_as_numpy_and_eager(name, capfd):
    a = CASES[name]
    graph = printed(show, capfd, a)
    assert graph == str(a) + "\n"
    assert graph == printed(show, capfd, a, graph=False)


def test_summarized_tensor_shows_three_edge_items(capfd):
    out = printed(show, capfd, np.arange(1001, dtype=np.int32))
    assert out == "[   0    1    2 ...  998  999 1000]\n"


def test_random_arrays_print_as_numpy(capfd):
    # One Program per dtype, many values: notation, widths and digits are chosen per array.
    r = np.random.default_rng(1)
    for dtype, e in ((np.float32, 9), (np.float64, 9), (np.float16, 4)):
        arrays = [(r.standard_normal(7) * 10.0 ** r.integers(-e, e, 7)).astype(dtype) for _ in range(40)]
        arrays += [np.round(r.standard_normal(7) * 100, r.integers(0, 4)).astype(dtype) for _ in range(40)]
        f = mycel.jit(show)
        for a in arrays:
            capfd.readouterr()
            f(Tensor(a))
            assert capfd.readouterr().out == str(a) + "\n"


def test_bfloat16_prints_like_eager_float32_view(capfd):
    def f(x):
        y = x.astype(mycel.bfloat16)
        print(y)
        return y

    a = np.array([0.1, 1.0, -3.3], np.float32)
    graph = printed(f, capfd, a)
    assert graph == printed(f, capfd, a, graph=False)
    assert graph == str(Tensor(a).astype(mycel.bfloat16).asnumpy()) + "\n"


def fstring_print(x, y):
    print(f"loss {x.sum()} of {x.shape}, y={y}!")
    print(f"{y}")
    return x * 2.0


def test_fstrings_print_values_like_eager(capfd):
    x = np.array([[1.0, 2.0], [3.0, 4.5]], np.float32)
    y = np.array([1, 2, 3], np.int32)
    graph = printed(fstring_print, capfd, x, y)
    assert graph == "loss 10.5 of (2, 2), y=[1 2 3]!\n[1 2 3]\n"
    assert graph == printed(fstring_print, capfd, x, y, graph=False)


def print_arguments(x):
    print("x is", x, x.shape, (x, 2), 1.5, 0.1, 1e-05, None, True, 7)
    return x + 1.0


def test_print_arguments_tuples_and_scalars_like_eager(capfd):
    x = np.array([0.5, 2.0], np.float32)
    graph = printed(print_arguments, capfd, x)
    assert graph == ("x is [0.5 2. ] (2,) (Tensor([0.5, 2. ], dtype=Float32), 2) 1.5 0.1 1e-05 "
                     "None True 7\n")
    assert graph == printed(print_arguments, capfd, x, graph=False)


def log(tag, x):
    print(tag, x)


def several_prints(x):
    print("first", x)
    y = x * 2.0
    print("second", y)
    log("third", y + 1.0)
    log("fourth", y - 1.0)
    return y


def test_every_print_runs_in_order(capfd):
    # Effects whose values are all None (prints, helpers that print) must not fold away.
    x = np.array([1.0, 2.0], np.float32)
    graph = printed(several_prints, capfd, x)
    assert graph == "first [1. 2.]\nsecond [2. 4.]\nthird [3. 5.]\nfourth [1. 3.]\n"
    assert graph == printed(several_prints, capfd, x, graph=False)


class PrintNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)

    def construct(self, x):
        h = self.dense(x)
        print("h:", h)
        return h.sum()


def test_cell_construct_prints_values_in_graph_mode(capfd):
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    net = PrintNet()
    capfd.readouterr()
    eager_h = net.dense(x)
    net(x)
    eager = capfd.readouterr().out
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net(x)
    graph = capfd.readouterr().out
    assert graph == eager == "h: " + str(eager_h.asnumpy()) + "\n"


class _PrintCell(nn.Cell):
    """MindSpore's Print primitive (each input on its own line) and its functional form."""

    def __init__(self):
        super().__init__()
        from mycel.ops import operations as P
        self.print = P.Print()

    def construct(self, x):
        self.print("x:", x, x.shape)
        y = x * 2
        mycel.ops.print_("y:", y)
        return y


def test_print_primitive_prints_each_input_on_a_line_in_both_modes(capfd):
    x = Tensor(np.array([0.5, 1.0, 2.0], np.float32))
    net = _PrintCell()
    capfd.readouterr()
    net(x)
    eager = capfd.readouterr().out
    assert eager == "x:\n[0.5 1.  2. ]\n(3,)\ny:\n[1. 2. 4.]\n"
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net(x)
        assert capfd.readouterr().out == eager
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
