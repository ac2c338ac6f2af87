"""nn padding layers (ConstantPad/ZeroPad/ReflectionPad/ReplicationPad, nn.Pad) and the small
layers beside them (Unflatten, ChannelShuffle, Roll, Threshold, FastGelu, Softmax2d) against
numpy, in both modes."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn

X = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)

CASES = [
    (lambda: nn.ConstantPad1d((1, 2), 0.5), lambda x: np.pad(x, ((0, 0),) * 3 + ((1, 2),), constant_values=0.5)),
    (lambda: nn.ConstantPad2d(1, -1.0), lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-1)),
    (lambda: nn.ConstantPad3d((1, 0, 0, 2, 1, 1), 0.0), lambda x: np.pad(x, ((0, 0), (1, 1), (0, 2), (1, 0)))),
    (lambda: nn.ZeroPad2d((2, 1, 0, 3)), lambda x: np.pad(x, ((0, 0), (0, 0), (0, 3), (2, 1)))),
    (lambda: nn.ReflectionPad1d(2), lambda x: np.pad(x, ((0, 0),) * 3 + ((2, 2),), mode="reflect")),
    (lambda: nn.ReflectionPad2d((1, 2, 2, 1)), lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="reflect")),
    (lambda: nn.ReplicationPad2d((3, 0, 1, 1)), lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (3, 0)), mode="edge")),
    (lambda: nn.ReplicationPad3d(1), lambda x: np.pad(x, ((0, 0), (1, 1), (1, 1), (1, 1)), mode="edge")),
    (lambda: nn.Pad(((0, 0), (1, 1), (2, 0), (0, 3)), "SYMMETRIC"),
     lambda x: np.pad(x, ((0, 0), (1, 1), (2, 0), (0, 3)), mode="symmetric")),
    (lambda: nn.Pad(((1, 2), (2, 1)), "REFLECT"), lambda x: np.pad(x, ((0, 0), (0, 0), (1, 2), (2, 1)), mode="reflect")),
    (lambda: nn.Pad(((1, 1),), "CONSTANT"), lambda x: np.pad(x, ((0, 0),) * 3 + ((1, 1),))),
    (lambda: nn.Unflatten(3, (5, 1)), lambda x: x.reshape(2, 3, 4, 5, 1)),
    (lambda: nn.ChannelShuffle(3), lambda x: x),
    (lambda: nn.Roll(2, 3), lambda x: np.roll(x, 2, 3)),
    (lambda: nn.Threshold(0.1, 20.0), lambda x: np.where(x > 0.1, x, 20.0)),
    (lambda: nn.FastGelu(), lambda x: x / (1 + np.exp(-1.702 * x))),
    (lambda: nn.Softmax2d(), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_layers_against_numpy(mode):
    ms.set_context(mode=mode)
    try:
        for make, ref in CASES:
            np.testing.assert_allclose(make()(ms.Tensor(X)).asnumpy(), ref(X.astype(np.float64)), rtol=1e-5, atol=1e-6)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_gradient_of_symmetric_pad_sums_the_mirrored_copies():
    pad = nn.Pad(((1, 2),), "SYMMETRIC")
    g = ms.grad(lambda x: pad(x).sum())(ms.Tensor(np.arange(4, dtype=np.float32)))
    np.testing.assert_array_equal(g.asnumpy(), [2, 1, 2, 2])  # [0 | 0 1 2 3 | 3 2]


def test_bad_padding_is_a_clear_error():
    with pytest.raises(ValueError, match="ConstantPad2d: padding must be an int or 4 ints >= 0"):
        nn.ConstantPad2d((1, 2, 3))
    with pytest.raises(ValueError, match="Pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC'"):
        nn.Pad(((1, 1),), "WRAP")
    with pytest.raises(ValueError, match="SYMMETRIC padding \\(5, 0\\) is larger than dimension"):
        nn.Pad(((5, 0),), "SYMMETRIC")(ms.Tensor(np.ones(3, np.float32)))
