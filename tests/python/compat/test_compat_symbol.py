"""mycel.Symbol (MindSpore 2.3's symbolic dims in Cell.set_inputs), as MindSpore's programs
write them: a symbolic dim compiles once for every size (as None does) and each call checks its
size against the symbol (min/max, divisor * N + remainder, one size per unique symbol); results
against numpy."""
import numpy as np
import pytest

import mycel as ms
from mycel import Symbol, Tensor, nn, ops


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


class Net(nn.Cell):
    def construct(self, x):
        return ops.abs(x) * 2


def _net(*spec_shape):
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Net()
    net.set_inputs(Tensor(shape=spec_shape, dtype=ms.float32))
    return net


def test_mindspores_example_shapes_and_values():
    s1 = Symbol(divisor=8, remainder=1)
    s2 = Symbol(max=32, unique=True)
    # (MindSpore's example has a leading None too: five dynamic dims overflow graph mode's
    # placeholder sizes, 10080^5 > 2^56, a limit of analysis/eval_op.cc, not of symbols.)
    net = _net(s1, s1, s2, s2)
    for shape in [(9, 17, 32, 32), (9, 9, 4, 4)]:
        x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
        out = net(Tensor(x))
        assert out.shape == shape
        np.testing.assert_allclose(out.asnumpy(), np.abs(x) * 2, rtol=1e-6)


def test_every_symbolic_size_runs():
    net = _net(Symbol(min=2), 3)
    for n in (2, 5, 9):
        x = -np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), np.abs(x) * 2)


@pytest.mark.parametrize("shape,match", [
    ((1, 8, 9, 4, 4), r"input 0 dim 1 has size 8"),          # 8 is not 8 N + 1
    ((1, 1, 9, 4, 4), r"input 0 dim 1 has size 1"),          # N >= 1: 1 = 8 * 0 + 1 is not
    ((1, 9, 9, 33, 33), r"input 0 dim 3 has size 33"),       # above max
    ((1, 9, 9, 4, 5), r"dim 4 has size 5 but input 0 dim 3 has size 4.*unique"),
])
def test_sizes_outside_the_symbol_are_refused(shape, match):
    net = _net(1, Symbol(divisor=8, remainder=1), Symbol(divisor=8, remainder=1),
               *([Symbol(max=32, unique=True)] * 2))
    with pytest.raises(ValueError, match=match):
        net(Tensor(np.ones(shape, np.float32)))


def test_non_unique_symbol_shares_only_its_constraints():
    s = Symbol(min=2, max=10)
    net = _net(s, s)
    out = net(Tensor(np.ones((3, 7), np.float32)))  # different sizes: fine without unique
    assert out.shape == (3, 7)
    with pytest.raises(ValueError, match="dim 0 has size 1"):
        net(Tensor(np.ones((1, 7), np.float32)))


def test_symbol_argument_checks():
    with pytest.raises(TypeError, match="'max' must be an int"):
        Symbol(max=2.5)
    with pytest.raises(TypeError, match="'unique' must be a bool"):
        Symbol(unique=1)
    with pytest.raises(ValueError, match="'min' must be positive"):
        Symbol(min=0)
    with pytest.raises(ValueError, match="'divisor' must be positive"):
        Symbol(divisor=0)
    with pytest.raises(ValueError, match=r"'remainder' must be in \[0, divisor\)"):
        Symbol(divisor=4, remainder=4)
    s = Symbol(max=16, min=4, divisor=4)
    assert [n for n in range(20) if s.accepts(n)] == [4, 8, 12, 16]
    assert "divisor=4" in repr(s)
    from mycel.common.symbol import Symbol as S2  # MindSpore's module path
    assert S2 is Symbol


def test_symbolic_spec_tensor_keeps_its_symbols():
    s = Symbol(max=8)
    t = Tensor(shape=[s, 3], dtype=ms.float32)
    assert t._symbolic_shape == (s, 3) and t._dynamic_shape == (None, 3)
    assert t.dtype == ms.float32


def test_spec_tensors_without_symbols_unchanged():
    t = Tensor(shape=[None, 3], dtype=ms.float32)
    assert t._dynamic_shape == (None, 3) and not hasattr(t, "_symbolic_shape")
    assert not hasattr(Tensor(shape=[2, 3], dtype=ms.float32), "_dynamic_shape")
