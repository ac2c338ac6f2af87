"""Frontend: printed IR of small functions for each construct (expected text, stable printing)."""
import inspect
import textwrap

import numpy as np

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter

parse = mycel._mycel.frontend.parse


def ir(fn, **kw):
    return parse(fn).ir(**kw)


def straight(x, y):
    z = x + y * 2
    return ops.relu(z), -z


def test_straight_line_and_canonical_op_calls():
    assert ir(straight) == textwrap.dedent("""\
        graph @straight(%x, %y) {
          %1 = mul(%y, 2)
          %2 = add(%x, %1)  # z
          %3 = relu(%2)
          %4 = neg(%2)
          %5 = make_tuple(%3, %4)
          return %5
        }
        """)


def branch(x):
    if x.sum() > 0:
        x = x - 1
    else:
        x = ops.exp(x)
    return x


# x.sum() of a parameter: `sum` is also a method of the sparse containers (records), so the
# parser leaves the choice to analysis: record_method(x, "sum", keywords, @thunk), the thunk
# holding the Tensor meaning, which analysis calls for a tensor (docs/graph_mode_internals.md).
def test_if_else_becomes_switch_with_join_parameter():
    assert ir(branch) == textwrap.dedent("""\
        graph @branch(%x) {
          %1 = py:mycel.common.graph_syntax.record_method(%x, "sum", (), @branch_sum)
          %2 = greater(%1, 0)
          %3 = switch(%2, @branch_true, @branch_false)
          %4 = %3()
          return %4
        }

        graph @branch_sum() {  # in @branch
          %5 = sum(%x, (), False)
          return %5
        }

        graph @branch_true() {  # in @branch
          %6 = sub(%x, 1)  # x
          %7 = @branch_after(%6)
          return %7
        }

        graph @branch_false() {  # in @branch
          %8 = exp(%x)  # x
          %9 = @branch_after(%8)
          return %9
        }

        graph @branch_after(%x.1) {  # in @branch
          return %x.1
        }
        """)


def loop(x, n):
    while x.sum() < n:
        x = x * 2
    return x


def test_while_is_a_recursive_graph_not_unrolled():
    assert ir(loop) == textwrap.dedent("""\
        graph @loop(%x, %n) {
          %1 = @loop_while(%x)
          return %1
        }

        graph @loop_while(%x.1) {  # in @loop
          %2 = py:mycel.common.graph_syntax.record_method(%x.1, "sum", (), @loop_sum)
          %3 = less(%2, %n)
          %4 = switch(%3, @loop_body, @loop_exit)
          %5 = %4()
          return %5
        }

        graph @loop_sum() {  # in @loop_while
          %6 = sum(%x.1, (), False)
          return %6
        }

        graph @loop_body() {  # in @loop_while
          %7 = mul(%x.1, 2)  # x
          %8 = @loop_while(%7)
          return %8
        }

        graph @loop_exit() {  # in @loop_while
          return %x.1
        }
        """)


def early(x):
    for i in range(3):
        if x.max() > 4:
            return x
        x = x + i
    return -x


def test_for_range_with_early_return_inside():
    text = ir(early)
    assert "graph @early_for(%$i, %x.1)" in text
    assert "scalar_lt(%$i, 3)" in text
    assert "@early_for(%" in text.split("graph @early_after")[1]  # back edge from the join
    assert "  return %x.1\n" in text.split("graph @early_true()")[1].split("graph")[0]


def test_break_and_continue_jump_to_continuations():
    def f(x, n):
        for i in range(n):
            if i > 2:
                break
            if i == 1:
                continue
            x = x + i
        return x
    text = ir(f)
    assert "graph @f_break(" in text
    assert text.count("@f_for(") >= 3  # entry, continue, end of body


def test_tuple_unpacking_aug_assign_subscripts_and_shape():
    def f(x, *args):
        a, b = x, x + 1
        a += b
        return a, x[0, 1:3, None], x.shape[0], x.reshape(2, -1), len(args)
    text = ir(f)
    assert "add(%x, 1)" in text and "add(%x, %1)  # a" in text
    assert "strided_slice(%x, (0, 1, 0), (1, 3, 0), (1, 1, 1), 0, 0, 0, 4, 1)" in text
    assert "shape(%x)" in text and "tuple_getitem(%4, 0)" in text
    assert "reshape(%x, (2, -1))" in text
    assert "tuple_len(%args)" in text


def test_boolean_ops_short_circuit_as_switch_and_ifexp():
    def f(x, y):
        return (x and y) if x is not None else not y
    text = ir(f)
    assert "is_not(%x, None)" in text
    assert "switch(%x, @f_and, @f_keep)" in text
    assert "scalar_not(%y)" in text


def test_dict_list_literals_and_keyword_attributes():
    def f(x):
        d = {"a": x, "b": 2}
        return d["a"], [x, x], ops.concat((x, x), 0), ops.sum(x, axis=1, keepdims=True)
    text = ir(f)
    assert 'make_dict(("a", "b"), %1)  # d' in text
    assert 'dict_getitem(%2, "a")' in text
    assert "concat(%5, 0)" in text
    assert "sum(%x, 1, True)" in text


def test_tensor_methods_map_to_registry_ops():
    def f(x):
        return x.sum(1), x.T, x.astype(mycel.float16), x.expand_dims(0), x.ndim, x.dtype
    text = ir(f)
    for s in ["sum(%x, 1, False)", "transpose(%x, ())", "cast(%x, float16)", "expand_dims(%x, 0)",
              "rank(%x)", "dtype(%x)"]:
        assert s in text, s


def test_python_helpers_on_constants_stay_compile_time_calls():
    import math

    def f(x):
        return x * math.sqrt(4)
    assert "%1 = py:math.sqrt(4)" in ir(f)


class Dense(nn.Cell):
    def __init__(self, n):
        super().__init__()
        self.weight = Parameter(Tensor(np.ones((n, n), np.float32)))
        self.mm = ops.MatMul(transpose_b=True)

    def construct(self, x):
        return self.mm(x, self.weight)


class Stack(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([Dense(2), Dense(2)])
        self.scale = 3

    def construct(self, x):
        for layer in self.layers:
            x = layer(x)
        return x * self.scale


def test_cell_weights_are_bound_parameters_and_celllist_is_a_loop():
    p = parse(Stack())
    text = p.ir()
    assert text.startswith("graph @Stack(%x, %layers.0.weight, %layers.1.weight) {\n")
    assert "graph @Stack_for(%$i, %x.3)" in text and "tuple_getitem(%1, %$i)" in text
    # The layers tuple is a node of @Stack used only inside the loop: it is scheduled in @Stack.
    assert "%1 = make_tuple(@Dense, @Dense.1)" in text and "graph @Dense.1(%x.2)" in text
    assert {"Dense", "Dense.1"} <= set(p.graph_names)
    dense = parse(Dense(2)).ir()
    assert "matmul(%x, %weight, False, True)" in dense  # preset attribute in its position
    assert "mul(%x.3, 3)" in text
    assert [n for n, _ in p.weights] == ["layers.0.weight", "layers.1.weight"]
    w = p.weights[0][1]
    assert np.array_equal(w.asnumpy(), np.ones((2, 2), np.float32))


def test_sequential_cell_parses_its_construct():
    seq = nn.SequentialCell([Dense(2), Dense(2)])
    text = parse(seq).ir()
    assert "graph @SequentialCell_for(%$i, %input_data.2)" in text
    assert text.startswith("graph @SequentialCell(%input_data, %0.weight, %1.weight)")


def helper(a, b=2):
    return a * b


def twice(x):
    return helper(x) + helper(x, b=3)


def test_helper_called_twice_is_parsed_once():
    p = parse(twice)
    text = p.ir()
    assert text.count("graph @helper(") == 1
    assert "@helper(%x, 2)" in text and "@helper(%x, 3)" in text
    assert p.parsed.count("helper") == 1


def make_scaled(k):
    def scaled(x):
        return x * k
    return scaled


def test_closures_read_outer_variables():
    # A Python closure cell folds to a constant; a nested def uses its parent's node (free variable).
    assert "mul(%x, 5)" in ir(make_scaled(5))

    def outer(x):
        y = x + 1
        def inner(z):
            return z * y
        return inner(x)
    text = ir(outer)
    assert "graph @inner(%z) {  # in @outer" in text
    assert "  %1 = add(%x, 1)  # y\n" in text  # a node of @outer, scheduled there
    assert "  %3 = mul(%z, %1)\n" in text  # used by @inner as a free variable


def test_locations_point_at_user_source():
    text = ir(straight, locations=True)
    line = inspect.getsourcelines(straight)[1] + 1
    assert f"test_frontend_ir.py:{line}:8" in text  # `x + y * 2` starts at column 8


def test_recursion_uses_the_cached_graph():
    def count(n, x):
        if n > 0:
            return count(n - 1, x + 1)
        return x
    text = parse(count).ir()
    assert text.count("graph @count(") == 1 and "@count(%" in text
