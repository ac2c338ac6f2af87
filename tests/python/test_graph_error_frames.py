"""Graph-mode errors raised inside a library Cell point at the user: the message (or the notes of
a Python exception) carries one "called from file:line: text" line per call that led there,
innermost first, each naming the Cell the call reached by its path from the compiled Cell."""
import os

import numpy as np
import pytest

import mycel
from mycel import nn

HERE = os.path.abspath(__file__)
BASIC = os.path.join(os.path.dirname(nn.__file__), "layer", "basic.py")


def line_of(text):
    """The line number of the first line of this file containing `text`."""
    with open(HERE) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def basic_line(text):
    with open(BASIC) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


class Head(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc2 = nn.Dense(128, 10)

    def construct(self, x):
        return self.fc2(x)  # frame: head


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(32, 64)
        self.head = Head()

    def construct(self, x):
        x = self.fc1(x)
        return self.head(x)  # frame: net


@pytest.fixture
def graph_mode():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_shape_error_in_a_library_cell(graph_mode):
    x = mycel.Tensor(np.ones((4, 32), np.float32))
    with pytest.raises(ValueError) as e:
        Net()(x)
    lines = str(e.value).split("\n")
    assert lines[-5:] == [
        f"{BASIC}:{basic_line('y = ops.dense(')}: y = ops.dense(x, self.weight, self.bias)",
        f"  called from {HERE}:{line_of('# frame: head')}: return self.fc2(x)  # frame: head",
        "    self.head.fc2 (Dense<input_channels=128, output_channels=10, has_bias=True>)",
        f"  called from {HERE}:{line_of('# frame: net')}: return self.head(x)  # frame: net",
        "    self.head (Head<>)",
    ]
    assert lines[0].startswith("[dense]")


def test_python_exception_in_a_library_cell_gets_notes(graph_mode):
    x = mycel.Tensor(np.ones((4, 32)))  # float64: Dense's dtype check raises a Python TypeError
    with pytest.raises(TypeError) as e:
        Net()(x)
    assert e.value.__notes__ == [
        f"{BASIC}:{basic_line('raise TypeError(input_dtype_error(')}: "
        'raise TypeError(input_dtype_error("Dense", x.dtype, self.weight.dtype))',
        f"  called from {HERE}:{line_of('x = self.fc1(x)')}: x = self.fc1(x)",
        "    self.fc1 (Dense<input_channels=32, output_channels=64, has_bias=True>)",
    ]


def test_control_flow_adds_no_frames(graph_mode):
    class Loop(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(3, 3)

        def construct(self, x):
            for _ in range(2):
                if x.sum() > 0:
                    x = self.fc(x) + x.reshape(-1)  # frame: loop
            return x

    with pytest.raises(ValueError) as e:
        Loop()(mycel.Tensor(np.ones((2, 3), np.float32)))
    frames = [line for line in str(e.value).split("\n") if "called from" in line]
    assert all("# frame: loop" in f for f in frames), frames


def test_a_call_on_a_line_starting_like_a_keyword_is_a_frame(graph_mode):
    class Outer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(5, 2)

        def construct(self, x):
            elsewhere = self.fc(x)  # frame: elsewhere
            return elsewhere

    with pytest.raises(ValueError) as e:
        Outer()(mycel.Tensor(np.ones((2, 3), np.float32)))
    assert (f"  called from {HERE}:{line_of('# frame: elsewhere')}: elsewhere = self.fc(x)  # frame: elsewhere\n"
            "    self.fc (Dense<input_channels=5, output_channels=2, has_bias=True>)") in str(e.value)


class TryBlock(nn.Cell):
    def construct(self, x):
        try:  # frame: try
            x = x + 1
        except ValueError:
            pass
        return x


class UsesTryBlock(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = TryBlock()

    def construct(self, x):
        return self.block(x)  # frame: uses


def test_parse_error_in_a_called_cell(graph_mode):
    with pytest.raises(SyntaxError) as e:
        UsesTryBlock()(mycel.Tensor(np.ones((2,), np.float32)))
    assert e.value.lineno == line_of("# frame: try")  # the location stays the error's own
    assert str(e.value.msg).split("\n")[-2:] == [
        f"  called from {HERE}:{line_of('# frame: uses')}: return self.block(x)  # frame: uses",
        "    self.block (TryBlock<>)"]


class Lookup(nn.Cell):
    def construct(self, x, idx):
        y = x * 2.0
        return mycel.ops.gather(y, idx, 0) + 1.0  # the index is known only when the program runs


def test_run_time_error_names_the_source_line_of_the_failing_instruction():
    """An error a kernel raises while the compiled program runs (here an index out of range, which
    no compile-time check can see) keeps its type and names the user's line it came from."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        net = Lookup()
        x = mycel.Tensor(np.ones((3, 2), np.float32))
        assert net(x, mycel.Tensor(np.array([0, 2], np.int32))).shape == (2, 2)
        with pytest.raises(IndexError) as e:
            net(x, mycel.Tensor(np.array([0, 7], np.int32)))
        msg = str(e.value)
        assert msg.startswith("[gather] index 7 is out of range for axis 0 with size 3"), msg
        line = line_of("return mycel.ops.gather(y, idx, 0) + 1.0")
        assert f"\n{HERE}:{line}: return mycel.ops.gather(y, idx, 0) + 1.0" in msg, msg
        assert msg.endswith("(while the compiled program ran)"), msg
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


class Block(nn.Cell):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Dense(i, o)

    def construct(self, x):
        return self.fc(x)  # frame: block


class Stack(nn.Cell):
    """Cells reached through a loop over a CellList: no `self.<attr>` names them at the call."""

    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([Block(4, 8), Block(9, 3)])

    def construct(self, x):
        for layer in self.layers:
            x = layer(x)  # frame: stack
        return x


def test_cells_reached_through_a_cell_list_loop_are_named(graph_mode):
    with pytest.raises(ValueError) as e:
        Stack()(mycel.Tensor(np.ones((2, 4), np.float32)))
    assert str(e.value).split("\n")[-5:] == [
        f"{BASIC}:{basic_line('y = ops.dense(')}: y = ops.dense(x, self.weight, self.bias)",
        f"  called from {HERE}:{line_of('# frame: block')}: return self.fc(x)  # frame: block",
        "    self.layers[1].fc (Dense<input_channels=9, output_channels=3, has_bias=True>)",
        f"  called from {HERE}:{line_of('# frame: stack')}: x = layer(x)  # frame: stack",
        "    self.layers[1] (Block<>)",
    ]


def test_cells_of_a_sequential_cell_are_named_by_index(graph_mode):
    class Seq(nn.Cell):
        def __init__(self):
            super().__init__()
            self.seq = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(9, 3)])

        def construct(self, x):
            return self.seq(x)  # frame: seq

    with pytest.raises(ValueError) as e:
        Seq()(mycel.Tensor(np.ones((2, 4), np.float32)))
    lines = str(e.value).split("\n")
    assert lines[-3] == "    self.seq[2] (Dense<input_channels=9, output_channels=3, has_bias=True>)", lines
    assert lines[-2:] == [f"  called from {HERE}:{line_of('# frame: seq')}: return self.seq(x)  # frame: seq",
                          "    self.seq (SequentialCell<>)"]


class Tokens(nn.Cell):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 3)

    def construct(self, ids):
        return self.embed(ids) * 2.0  # frame: tokens


class Model2(nn.Cell):
    def __init__(self):
        super().__init__()
        self.blocks = nn.CellList([Tokens()])

    def construct(self, ids):
        for block in self.blocks:
            out = block(ids)  # frame: model
        return out


def test_run_time_error_in_a_library_cell_names_the_calls_that_led_there(graph_mode):
    """Inlining flattens the calls into one program; each instruction keeps the chain of calls it
    was inlined through, so an error the running program raises inside a library layer reads like
    a traceback: the library line, then the user's calls and the Cells they reached."""
    net = Model2()
    assert net(mycel.Tensor(np.array([0, 4], np.int32))).shape == (2, 3)  # compiles: ids are data
    with pytest.raises(IndexError) as e:
        net(mycel.Tensor(np.array([0, 9], np.int32)))
    lines = str(e.value).split("\n")
    embedding_py = os.path.join(os.path.dirname(nn.__file__), "layer", "embedding.py")
    with open(embedding_py) as f:
        lib_line = next(i for i, line in enumerate(f, 1) if "return ops.embedding(ids, self.embedding_table)" in line)
    assert lines[-6:] == [
        f"{embedding_py}:{lib_line}: return ops.embedding(ids, self.embedding_table)",
        f"  called from {HERE}:{line_of('# frame: tokens')}: return self.embed(ids) * 2.0  # frame: tokens",
        "    self.blocks[0].embed (Embedding<vocab_size=5, embedding_size=3, padding_idx=None>)",
        f"  called from {HERE}:{line_of('# frame: model')}: out = block(ids)  # frame: model",
        "    self.blocks[0] (Tokens<>)",
        "  (while the compiled program ran)",
    ], lines
