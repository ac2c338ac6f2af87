"""Graph-mode syntax, fourth round: methods of compile-time values (str, int, tuples), the
builtins max/min/sum with tensors, list comprehensions whose length analysis finds, and dict
comprehensions / dict(...). Each construct runs eagerly and through mycel.jit on the same inputs
and must give exactly the same values; what stays unsupported fails with the user's file:line."""

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from graph_helpers import arr, assert_same, line_of, located

FILE = __file__.split("/")[-1]


def same(fn, *args):
    """fn eagerly and compiled on the same arguments (numpy arrays become Tensors)."""
    args = [Tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    eager = fn(*args)
    graph = mycel.jit(fn)(*args)
    assert_same(eager, graph)
    return graph


# ---- 1. methods of compile-time values ----

def str_method_condition(x):
    name = "Layer"
    if name.lower() == "layer":
        x = x * 2.0
    if name.startswith("x") or not name.endswith("er"):
        x = x - 100.0
    return x + len(name.upper())


def shape_methods(x):
    shape = x.shape
    return x.reshape(shape.index(3), -1) * shape.count(1)


def tuple_index_of_constants(x, v):
    t = (4, 7, 9, 7)
    return x * t.index(v) + t.count(7)


def format_constants(x, a, b):
    tag = "{}-{}".format(a, b)
    key = "{k}:{v:.2f}".format(k=a, v=0.5)
    parts = tag.split("-")
    if " ".join(["a", tag]) == "a 3-b" and key == "3:0.50":
        x = x + 1.0
    return x * len(tag) + len(parts), len(key)


def methods_of_python_scalars(x, n):
    return x * n.bit_length() + (2.5).is_integer() + "abc".find("c")


def test_methods_of_compile_time_values():
    same(str_method_condition, arr(2, 3))
    same(shape_methods, arr(1, 3, 2))
    same(tuple_index_of_constants, arr(2), 7)
    same(tuple_index_of_constants, arr(2), 9)
    same(format_constants, arr(2), 3, "b")
    same(methods_of_python_scalars, arr(2), 12)


def method_raises(x):
    t = (1, 2)
    return x * t.index(5)


def test_method_errors_are_python_errors():
    with pytest.raises(ValueError, match="not in tuple") as info:
        mycel.jit(method_raises)(Tensor(arr(2)))
    assert f"{FILE}:{line_of(method_raises, 'return x * t.index(5)')}" in "".join(info.value.__notes__)


def method_of_tensor(x):
    return x.lower()


def method_with_run_time_argument(x):
    t = (1.0, 2.0)
    return t.index(x.sum())


def test_methods_of_run_time_values_are_located_errors():
    located(method_of_tensor, (Tensor(arr(2)),), NotImplementedError, "return x.lower()",
            "method 'lower' of f32[2] is not supported")
    located(method_with_run_time_argument, (Tensor(arr(2)),), NotImplementedError,
            "return t.index(x.sum())", "cannot call method 'index' in graph mode: argument 0")


# ---- 2. max / min / sum with tensors ----

def max_min_of_two(a, b):
    return max(a, b), min(a, b), max(b, a), min(b, a)


def max_min_of_seq(a, b, c):
    xs = (a, b, c)
    return max(xs), min([a, b, c]), max(a, b, c), min(a, c, b)


def max_with_number(a):
    return max(a, 0.5) * 1.0, min(a, 0.5) * 1.0, max(2, a) + a


def sums(a, b, c):
    xs = (a, b, c)
    return sum(xs), sum([a, b], c), sum(xs, start=1.0), sum(x * x for x in xs)


def builtins_on_constants(x):
    n = x.shape[0]
    return x * max(n, 3) + min((4, 2, 7)) + sum((1, 2, 3)) + abs(-2) + len(x.shape) + round(2.6)


def test_max_min_sum_with_tensors():
    for seed in range(3):
        a, b, c = (np.asarray(arr(1, seed=seed + k)[0]) for k in range(3))  # 0-d
        same(max_min_of_two, a, b)
        same(max_min_of_seq, a, b, c)
        same(sums, a, b, c)
    one = np.array(1.0, np.float32)
    same(max_min_of_two, one, one.copy())  # ties: the first wins
    same(max_min_of_two, arr(1), arr(1, seed=1))
    same(builtins_on_constants, arr(5))
    same(builtins_on_constants, arr(2))


def test_max_with_a_number_gives_its_value():
    # Python returns the number itself; graph mode a tensor of the number's weak dtype.
    for v in (0.0, 1.0):
        x = Tensor(np.array(v, np.float32))
        eager = max_with_number(x)
        graph = mycel.jit(max_with_number)(x)
        for e, g in zip(eager, graph):
            assert isinstance(g, Tensor) and g.dtype == mycel.float32
            np.testing.assert_array_equal(g.asnumpy(), np.float32(e.asnumpy() if isinstance(e, Tensor) else e))


def max_of_rows(x):
    return max(x, x * 2.0)


def test_max_of_many_elements_raises_as_eager():
    x = Tensor(arr(3))
    with pytest.raises(ValueError) as eager:
        max_of_rows(x)
    with pytest.raises(ValueError) as graph:
        mycel.jit(max_of_rows)(x)
    assert str(graph.value) == str(eager.value)


# ---- 4. list comprehensions over sequences analysis knows ----

def comp_over_rows(x):
    return [r * 2.0 for r in x]


def comp_over_tuple_param(tup):
    return [ops.exp(t) for t in tup], tuple(t + 1.0 for t in tup)


def comp_over_zip_params(xs, ys):
    return [a + b for a, b in zip(xs, ys)]


def comp_with_filters(xs):
    return [t * 2.0 for t in xs if t.shape[0] > 1], [i for i, t in enumerate(xs) if i % 2 == 0]


def comp_two_fors(xs):
    return [a * b for a in xs for b in xs if a.shape == b.shape]


def comp_filter_on_shape(x):
    return [x * k for k in range(4) if x.shape[0] > k]


def test_list_comprehensions_whose_length_analysis_finds():
    same(comp_over_rows, arr(3, 2))
    same(comp_over_tuple_param, (Tensor(arr(2)), Tensor(arr(3, seed=1))))
    same(comp_over_zip_params, (Tensor(arr(2)), Tensor(arr(2, seed=1))), [Tensor(arr(2, seed=2))] * 2)
    same(comp_with_filters, (Tensor(arr(2)), Tensor(arr(1)), Tensor(arr(3))))
    same(comp_two_fors, (Tensor(arr(2)), Tensor(arr(1))))
    same(comp_filter_on_shape, arr(2))


def comp_run_time_filter(xs):
    return [t for t in xs if t.sum() > 0]


def set_comp(xs):
    return {t for t in xs}


def test_comprehension_errors_are_located():
    located(comp_run_time_filter, ((Tensor(arr(2)), Tensor(arr(2, seed=1))),), TypeError,
            "return [t for t in xs if t.sum() > 0]", "branches of this condition give different types")
    located(set_comp, ((Tensor(arr(2)),),), SyntaxError, "return {t for t in xs}", "'set' is not supported")


# ---- 3. dict comprehensions and dict(...) ----

def dict_comp_range(x):
    return {k: x * k for k in range(3)}


def dict_comp_zip(x):
    keys = ("a", "b")
    vals = (x, x + 1.0)
    return {k: v for k, v in zip(keys, vals)}


def dict_comp_params(vals):
    keys = ("w", "skip", "b")
    d = {k: v * 2.0 for k, v in zip(keys, vals) if k != "skip"}
    return d


def dict_builtins(x):
    keys = ["p", "q"]
    d1 = dict(zip(keys, (x, x * 2.0)))
    d2 = dict(a=1, b=x)
    d3 = dict(enumerate((x, x)))
    return d1, d2, d3, len(d1) + len(d2)


def test_dict_comprehensions():
    same(dict_comp_range, arr(2))
    same(dict_comp_zip, arr(2))
    same(dict_comp_params, (Tensor(arr(2)), Tensor(arr(1)), Tensor(arr(3))))
    same(dict_builtins, arr(2))
