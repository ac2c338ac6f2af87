"""Graph-mode syntax, third round: chained comparisons, del, starred assignment, list methods,
dtype comparisons, raise/assert, and an index tensor inside a tuple key. Each construct runs
eagerly and through mycel.jit on the same inputs and must give exactly the same values (or the
same exception type and message); what stays unsupported fails with the user's file:line.

PYTEST_DONT_REWRITE: the functions under test use `assert`, whose eager message must stay Python's."""
import math

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


def same_error(fn, *args, kind):
    """Eager and graph mode raise the same exception type with the same message; graph mode adds
    the line that raised as a note. Returns the graph-mode exception."""
    args = [Tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(kind) as eager:
        fn(*args)
    with pytest.raises(kind) as graph:
        mycel.jit(fn)(*args)
    assert type(graph.value) is type(eager.value)
    assert str(graph.value) == str(eager.value)
    return graph.value


def note_of(exc):
    notes = getattr(exc, "__notes__", [])
    assert len(notes) == 1, notes
    return notes[0]


def assert_note(exc, fn, text):
    """The note graph mode adds: <file>:<line>: <source line>, for the line holding `text`."""
    note = note_of(exc)
    assert f"{FILE}:{line_of(fn, text)}: " in note and text in note, note


# ---- 1. chained comparisons ----

def chain_shapes(x):
    if 0 < x.shape[0] < 3 <= x.shape[1]:
        x = x + 1.0
    if 1 < x.shape[0] == 2 != 3:
        x = x * 2.0
    if 0 <= x.ndim < 1:
        x = x - 100.0
    return x


def chain_values(x, a):
    return 0 < a < 2, 2 < a < 9, a == 1 in (1, 2), x.shape[0] in (1, 2) in [(1, 2)], None is None is not a


def chain_tensors(s):
    lo = ops.zeros_like(s)
    return 0.0 < s < 10.0, lo < s <= s, s > 10.0 > lo, lo <= s < 1.0


def explode(x):
    raise RuntimeError("evaluated")


def chain_short_circuit(x):
    if 2 < 1 < explode(x):       # the second comparison never runs
        return x
    return x + 1.0


def noisy(x):
    print("middle evaluated")
    return x.shape[0]


def chain_middle_once(x):
    if 0 < noisy(x) < 10:
        return x * 3.0
    return x


def test_chained_comparisons_match_eager(capfd):
    same(chain_shapes, arr(2, 3))
    same(chain_shapes, arr(4, 3))
    for a in (1, 2, 5):
        same(chain_values, arr(2, 3), a)
    for v in (5.0, -1.0, 0.5, 11.0):
        same(chain_tensors, np.array([v], np.float32))
    same(chain_short_circuit, arr(2))
    capfd.readouterr()
    same(chain_middle_once, arr(2))
    assert capfd.readouterr().out.count("middle evaluated") == 2  # once per mode


def chain_ambiguous(x):
    return x < x + 1.0 < x + 2.0


def test_chain_of_many_element_tensors_is_an_error_in_both_modes():
    with pytest.raises(ValueError):
        chain_ambiguous(Tensor(arr(2, 3)))
    with pytest.raises(ValueError, match="one-element"):
        mycel.jit(chain_ambiguous)(Tensor(arr(2, 3)))


# ---- 2. del ----

def del_then_rebind(x):
    a = x + 1.0
    b = a * 2.0
    del a, b
    a = x * 3.0
    return a


def del_unused(x):
    tmp = x.sum()
    y = x - tmp
    del tmp
    return y


def test_del_matches_eager():
    same(del_then_rebind, arr(2, 3))
    same(del_unused, arr(3))


def del_then_read(x):
    y = x + 1.0
    del y
    return y * 2.0


def del_in_branch(x):
    y = x + 1.0
    if x.sum() > 0:
        del y
    return y


def del_twice(x):
    y = x
    del y
    del y  # again
    return x


def test_reading_a_deleted_name_is_a_located_error():
    with pytest.raises(UnboundLocalError):
        del_then_read(Tensor(arr(2)))
    e = located(del_then_read, (Tensor(arr(2)),), UnboundLocalError, "return y * 2.0",
                "cannot access local variable 'y' where it is not associated with a value")
    assert isinstance(e, NameError)
    # Deleted on one path: reading it after the paths join is refused (it cannot be a value).
    located(del_in_branch, (Tensor(arr(2)),), UnboundLocalError, "return y", "deleted with `del`")
    located(del_twice, (Tensor(arr(2)),), UnboundLocalError, "del y  # again", "local variable 'y'")


def del_item(x):
    d = {"a": x}
    del d["a"]
    return x


def test_del_of_items_is_a_located_syntax_error():
    located(del_item, (Tensor(arr(2)),), SyntaxError, 'del d["a"]', "'del of an item' is not supported")


# ---- 3. starred assignment ----

def three(x):
    return x, x * 2.0, x * 3.0


def star_literal(x):
    a, *rest = (x, x + 1.0, x + 2.0)
    *init, last = [x, x - 1.0]
    first, *mid, end = (x, x * 4.0, x * 5.0, x * 6.0)
    u, *empty, v = (x, x + 7.0)
    return a, rest, init, last, first, mid, end, u, empty, v


def star_call_result(x):
    a, *rest = three(x)
    *init, last = three(x)
    p, *mid, q = three(x)
    return a, rest, init, last, p, mid, q, len(mid)


def star_tensor_rows(x):
    first, *others = x
    *head, tail = x
    return first, others, head, tail


def star_for_target(x):
    acc = x
    for a, *rest in ((x, x + 1.0, x + 2.0), (x * 2.0, x * 3.0)):
        acc = acc + a * len(rest)
        for r in rest:
            acc = acc - r
    return acc


def test_starred_assignment_matches_eager():
    same(star_literal, arr(2, 2))
    same(star_call_result, arr(3))
    same(star_tensor_rows, arr(4, 3))
    same(star_for_target, arr(2))


def star_too_short_literal(x):
    a, b, *rest = (x,)
    return a


def star_too_short_call(x):
    a, b, c, *rest, d = three(x)
    return a


def unpack_too_many(x):
    a, b = (x, x, x)
    return a


def test_starred_unpacking_errors_match_python():
    # A literal: found when parsing; a call's result: at compile time, with Python's message.
    e = located(star_too_short_literal, (Tensor(arr(2)),), ValueError, "a, b, *rest = (x,)",
                "not enough values to unpack (expected at least 2, got 1)")
    e = same_error(star_too_short_call, arr(2), kind=ValueError)
    assert str(e) == "not enough values to unpack (expected at least 4, got 3)"
    assert_note(e, star_too_short_call, "a, b, c, *rest, d = three(x)")
    located(unpack_too_many, (Tensor(arr(2)),), ValueError, "a, b = (x, x, x)",
            "too many values to unpack (expected 2)")


# ---- 4. list methods ----

def append_in_loop(x):
    outs = []
    for i in range(3):
        outs.append(x * float(i))
    return ops.concat(outs)


def list_methods_in_loops(x):
    outs = []
    for i in range(4):
        outs.append(x * float(i))
        if i % 2 == 1:
            outs.insert(0, x - float(i))
    last = outs.pop()
    second = outs.pop(1)
    outs.extend([x, x + 1.0])
    outs.extend((x * 9.0,))
    outs.insert(-1, x * 8.0)
    total = x
    for o in outs:
        total = total + o
    return ops.stack(outs), last, second, len(outs), total


def list_methods_literal(x):
    outs = [x]
    outs.extend((x + 1.0, x + 2.0))
    outs.insert(1, x * 10.0)
    outs.insert(100, x * 20.0)
    outs.insert(-100, x * 30.0)
    last = outs.pop()
    first = outs.pop(0)
    return outs, last, first, len(outs)


def append_nested(x):
    rows = []
    for i in range(2):
        row = []
        for j in range(3):
            row.append(x * float(i * 3 + j))
        rows.append(ops.stack(row))
    return ops.stack(rows)


def append_many(x):
    outs = []
    for i in range(40):           # more iterations than analysis unrolls plain loops
        outs.append(x[0] * float(i))
    return ops.stack(outs)


def append_rows(x):
    outs = []
    for r in x:
        outs.append(r * 2.0)
    return outs


class Heads(nn.Cell):
    def __init__(self):
        super().__init__()
        self.heads = nn.CellList([nn.Dense(3, 2), nn.Dense(3, 2), nn.Dense(3, 2)])

    def construct(self, x):
        outs = []
        for h in self.heads:
            outs.append(h(x))
        return ops.concat(outs, 1)


def test_list_methods_match_eager():
    same(append_in_loop, arr(2, 3))
    same(list_methods_in_loops, arr(2))
    same(list_methods_literal, arr(2))
    same(append_nested, arr(2))
    same(append_many, arr(2, 3))
    same(append_rows, arr(3, 2))
    net = Heads()
    x = Tensor(arr(4, 3))
    eager = net(x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_array_equal(net(x).asnumpy(), eager.asnumpy())


def append_in_while(x):
    outs = []
    i = 0
    while x.sum() > float(i):
        outs.append(x)
        i = i + 1
    return x


def append_to_parameter(x, outs):
    outs.append(x)
    return x


def pop_empty(x):
    outs = []
    return outs.pop()


def pop_empty_after_loop(x):
    outs = []
    for i in range(2):
        outs.append(x)
    outs.pop()
    outs.pop()
    return outs.pop()


def test_list_method_errors_are_located():
    located(append_in_while, (Tensor(np.ones(2, np.float32)),), NotImplementedError,
            "while x.sum() > float(i):", "list 'outs' changes length")
    located(append_to_parameter, (Tensor(arr(2)), [Tensor(arr(2))]), SyntaxError, "outs.append(x)",
            "build and return a new list instead")
    located(pop_empty, (Tensor(arr(2)),), IndexError, "return outs.pop()", "pop from empty list")
    e = same_error(pop_empty_after_loop, arr(2), kind=IndexError)
    assert str(e) == "pop from empty list"
    assert_note(e, pop_empty_after_loop, "return outs.pop()")


# ---- 5. dtype comparisons ----

def dtype_branches(x):
    if x.dtype == mycel.float32:
        x = x + 1
    if x.dtype != mycel.float16 and x.dtype in (mycel.float16, mycel.float32):
        x = x * 2
    if x.dtype not in (mycel.int32,):
        x = x - 3
    if x.dtype is mycel.float64 or x.dtype == x.dtype:
        x = x * 5
    return x, x.dtype == mycel.int32, x.dtype != mycel.int32, mycel.float32 == x.dtype


def test_dtype_comparisons_fold_like_eager():
    for dt in (np.float32, np.float64, np.int32):
        same(dtype_branches, arr(2, 3, dtype=dt))


def dtype_ir(x):
    return x + 1.0 if x.dtype == mycel.float32 else x


def test_dtype_comparison_leaves_no_runtime_op():
    g = mycel.jit(dtype_ir)
    x = Tensor(arr(2))
    g(x)
    ir = g._compiled.graph.ir(x)
    assert "equal" not in ir and "switch" not in ir, ir


# ---- 6. raise and assert ----

def assert_passes(x):
    assert x.ndim == 2, "needs a matrix"
    assert x.shape[1] > 1
    if x.shape[0] > 100:
        raise ValueError("too many rows")
    return x * 2.0


def assert_fails(x):
    assert x.ndim == 2, "ok"
    assert x.shape[0] == 5, f"expected 5 rows, got {x.shape[0]}"
    return x


def assert_no_message(x):
    assert x.shape[0] == 5
    return x


def raise_on_shape(x):
    if x.shape[-1] != 4:
        raise ValueError(f"last dim must be 4, got {x.shape}")
    return x


def raise_class(x):
    if x.dtype != mycel.float64:
        raise TypeError
    return x


class ShapeMismatch(Exception):
    pass


def raise_custom(x):
    if x.ndim < 3:
        raise ShapeMismatch("rank", x.ndim)
    return x


def test_compile_time_raise_and_assert_match_python():
    x = arr(3, 2)
    same(assert_passes, x)
    g = mycel.jit(assert_passes)
    g(Tensor(x))
    assert "raise" not in g._compiled.graph.program_text(Tensor(x))  # passing checks disappear
    e = same_error(assert_fails, x, kind=AssertionError)
    assert str(e) == "expected 5 rows, got 3"
    assert_note(e, assert_fails, 'assert x.shape[0] == 5, f"expected 5 rows, got {x.shape[0]}"')
    assert str(same_error(assert_no_message, x, kind=AssertionError)) == ""
    assert str(same_error(raise_on_shape, x, kind=ValueError)) == "last dim must be 4, got (3, 2)"
    assert str(same_error(raise_class, x, kind=TypeError)) == ""
    e = same_error(raise_custom, x, kind=ShapeMismatch)
    assert e.args == ("rank", 2)
    assert_note(e, raise_custom, 'raise ShapeMismatch("rank", x.ndim)')


def runtime_assert(x):
    assert (x > 0).all(), "inputs must be positive"
    return ops.log(x)


def runtime_raise(x):
    y = x * 2.0
    if y.sum() > 100.0:
        raise ValueError("sum too large")
    return y


def fail_helper(x):
    raise ShapeMismatch(f"bad {x.shape}")


def runtime_raise_in_helper(x):
    if x.max() > 10.0:
        y = fail_helper(x)
        return y * 2.0
    return x + 1.0


def runtime_raise_in_loop(x):
    i = 0
    while i < x.sum():
        if i >= 3:
            raise RuntimeError("more than 3 iterations")
        i = i + 1
    return x + i


def test_runtime_raise_and_assert_run_in_the_program():
    ok, bad = np.abs(arr(2, 3)) + 0.5, arr(2, 3)
    bad[0, 0] = -1.0
    g = mycel.jit(runtime_assert)
    g(Tensor(ok))
    assert "raise" in g._compiled.graph.program_text(Tensor(ok))
    same(runtime_assert, ok)
    e = same_error(runtime_assert, bad, kind=AssertionError)
    assert str(e) == "inputs must be positive"
    assert_note(e, runtime_assert, 'assert (x > 0).all(), "inputs must be positive"')
    np.testing.assert_array_equal(g(Tensor(ok)).asnumpy(), runtime_assert(Tensor(ok)).asnumpy())  # after a raise
    same(runtime_raise, np.ones((2, 2), np.float32))
    same_error(runtime_raise, np.full((2, 2), 50.0, np.float32), kind=ValueError)
    same(runtime_raise_in_helper, np.ones(3, np.float32))
    e = same_error(runtime_raise_in_helper, np.full(3, 20.0, np.float32), kind=ShapeMismatch)
    assert str(e) == "bad (3,)"
    same(runtime_raise_in_loop, np.full(2, 1.0, np.float32))
    same_error(runtime_raise_in_loop, np.full(2, 5.0, np.float32), kind=RuntimeError)


def print_then_raise(x):
    print("before the check")
    if x.sum() > 0:
        print("in the branch")
        raise ValueError("positive")
    return x


def test_prints_before_a_runtime_raise_come_first(capfd):
    x = Tensor(np.ones(2, np.float32))
    for run in (print_then_raise, mycel.jit(print_then_raise)):
        capfd.readouterr()
        with pytest.raises(ValueError, match="positive"):
            run(x)
        assert capfd.readouterr().out.split("\n")[:2] == ["before the check", "in the branch"]


class CheckedNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(3, 2)

    def construct(self, x):
        if x.shape[1] != 3:
            raise ValueError(f"expected 3 features, got {x.shape[1]}")
        assert x.sum() > -1e9, "not finite"
        return self.fc(x)


def test_checks_in_a_cell_and_under_grad():
    net = CheckedNet()
    x = Tensor(arr(2, 3))
    eager = net(x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_array_equal(net(x).asnumpy(), eager.asnumpy())
    with pytest.raises(ValueError, match="expected 3 features, got 4") as info:
        net(Tensor(arr(2, 4)))
    assert_note(info.value, CheckedNet.construct, 'raise ValueError(f"expected 3 features, got {x.shape[1]}")')

    def loss(x):
        assert x.sum() > 0, "needs a positive sum"
        return (x * x).sum()
    g = mycel.grad(loss)

    @mycel.jit
    def step(x):
        return g(x) * 1.0
    pos = np.abs(arr(3)) + 0.1
    np.testing.assert_array_equal(step(Tensor(pos)).asnumpy(), 2 * pos)
    with pytest.raises(AssertionError, match="needs a positive sum"):
        step(Tensor(-pos))


def compile_time_helper_error(x):
    return x * math.sqrt(x.shape[0] - 10)


def raise_not_an_exception(x):
    raise 3


def bare_raise(x):
    raise  # re-raise


def raise_from(x):
    raise ValueError("a") from KeyError("b")


def raise_from_none(x):
    if x.ndim == 1:
        raise ValueError("one dim") from None
    return x


def test_raise_errors_are_located():
    e = same_error(compile_time_helper_error, arr(2), kind=ValueError)  # math domain error
    assert_note(e, compile_time_helper_error, "return x * math.sqrt(x.shape[0] - 10)")
    located(raise_not_an_exception, (Tensor(arr(2)),), TypeError, "raise 3",
            "exceptions must derive from BaseException")
    located(bare_raise, (Tensor(arr(2)),), SyntaxError, "raise  # re-raise", "'a bare `raise`' is not supported")
    located(raise_from, (Tensor(arr(2)),), SyntaxError, 'raise ValueError("a") from KeyError("b")',
            "raise the exception without `from`")
    assert str(same_error(raise_from_none, arr(2), kind=ValueError)) == "one dim"


# ---- 7. an index tensor inside a tuple key ----

def take_columns(x, idx):
    return x[:, idx]


def take_rows_sliced(x, idx):
    return x[idx, 1:]


def take_mixed(y, idx):
    return y[1, :, idx], y[..., idx], y[None, idx, 1], y[1, idx], y[:, idx, ::2], y[idx, :, -1]


def take_list(y):
    return y[:, [0, 2]], y[1, [2, 0], 1:]


def test_tensor_inside_tuple_key_matches_eager():
    x, y = arr(4, 3), arr(3, 4, 5)
    for idx in (np.array([2, 0, 2], np.int64), np.array([1], np.int32)):
        same(take_columns, x, idx)
        same(take_rows_sliced, x, idx)
    for idx in (np.array([[1, 0], [2, 2]], np.int32), np.array(2, np.int64), np.array([-1, 0], np.int64)):
        same(take_mixed, y, idx)
    same(take_list, y)


def test_tensor_inside_tuple_key_gradient():
    x, idx = Tensor(arr(3, 4)), Tensor(np.array([3, 3, 0], np.int64))

    def f(x, idx):
        return (x[1:, idx] * 2.0).sum()
    g = mycel.grad(f)

    @mycel.jit
    def step(x, idx):
        return g(x, idx)
    expect = np.zeros((3, 4), np.float32)
    for j in (3, 3, 0):
        expect[1:, j] += 2.0
    np.testing.assert_array_equal(g(x, idx).asnumpy(), expect)
    np.testing.assert_array_equal(step(x, idx).asnumpy(), expect)


def two_index_tensors(x, i):
    return x[i, i]


def bool_mask_in_tuple(x, m):
    return x[:, m]


def test_tensor_inside_tuple_key_errors():
    x = Tensor(arr(3, 3))
    located(two_index_tensors, (x, Tensor(np.array([0], np.int64))), SyntaxError, "return x[i, i]",
            "index one axis at a time")
    with pytest.raises(IndexError, match="must be integer or bool, got float32"):
        mycel.jit(take_columns)(x, Tensor(np.array([1.0], np.float32)))
    with pytest.raises(IndexError, match="must be integer or bool, got float32"):
        take_columns(x, Tensor(np.array([1.0], np.float32)))
    located(bool_mask_in_tuple, (x, Tensor(np.array([True, False, True]))), NotImplementedError,
            "return x[:, m]", "bool mask inside a tuple key")
